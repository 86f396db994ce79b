import CapctlCommands
import CaptureKit
import Dispatch
import Synchronization

/// The service's WHEP viewers: each is added when its offer is answered and
/// removed when it is deleted (DELETE), its connection fails or closes, it
/// stays disconnected or never connects, or its camera ends. A sweep every
/// second reads each peer's state and statistics, so that `/metrics` and
/// `/session` never wait on a peer.
package final class WebRTCViewers: Sendable {
    /// How long a viewer may take to connect after its answer.
    static let connectTimeout: Int64 = 15_000_000_000
    /// How long a connection may stay disconnected (no ICE consent) before it is ended.
    static let disconnectedTimeout: Int64 = 10_000_000_000
    /// How long a connected viewer's receiver reports may say it received
    /// nothing more while packets are sent to it: a browser that closed or
    /// vanished without a DELETE (its RTCP stops).
    static let silenceTimeout: Int64 = 10_000_000_000

    /// What the viewers of one camera that have left did, together.
    package struct Totals: Sendable {
        package var viewers = 0
        package var bytesSent: Int64 = 0
        package var packetsSent: Int64 = 0
        package var packetsLost: Int64 = 0
    }

    private struct State {
        var viewers: [String: WebRTCViewer] = [:]
        var ended: [String: Totals] = [:]
        var endReasons: [String: Int] = [:]
        /// Places taken by offers being answered (a peer starting), so that the limit holds.
        var reserved = 0
        var closed = false
    }
    private let state = Mutex(State())
    private let sweeper = Mutex<(any DispatchSourceTimer)?>(nil)
    private let queue = DispatchQueue(label: "webrtc-viewers")
    /// Called with each viewer that leaves and why (on the sweeping queue or the caller's thread).
    private let left: @Sendable (WebRTCViewer, String, WebRTCPeerStatistics) -> Void

    init(left: @escaping @Sendable (WebRTCViewer, String, WebRTCPeerStatistics) -> Void) {
        self.left = left
    }

    /// Takes a place for a viewer about to be made, if fewer than `limit` are watching or
    /// starting; `add` or `release` gives it back.
    func reserve(limit: Int) -> Bool {
        state.withLock { state in
            guard !state.closed, state.viewers.count + state.reserved < limit else { return false }
            state.reserved += 1
            return true
        }
    }

    func release() { state.withLock { $0.reserved = max(0, $0.reserved - 1) } }

    /// Adds a viewer in the place reserved for it.
    func add(_ viewer: WebRTCViewer) -> Bool {
        let added = state.withLock { state -> Bool in
            state.reserved = max(0, state.reserved - 1)
            guard !state.closed else { return false }
            state.viewers[viewer.id] = viewer
            return true
        }
        if added { startSweeping() }
        return added
    }

    var count: Int { state.withLock { $0.viewers.count } }
    var all: [WebRTCViewer] { state.withLock { Array($0.viewers.values) }.sorted { $0.created < $1.created } }
    var ended: [String: Totals] { state.withLock { $0.ended } }
    var endReasons: [String: Int] { state.withLock { $0.endReasons } }

    /// The viewers watching now and the totals of those gone, read together: a viewer that
    /// leaves moves from one to the other in one step, so no counter made of both goes down.
    var snapshot: (viewers: [WebRTCViewer], ended: [String: Totals]) {
        state.withLock { state in
            (Array(state.viewers.values).sorted { $0.created < $1.created }, state.ended)
        }
    }

    /// Ends viewer `id` for `reason`; false when there is no such viewer.
    @discardableResult
    func end(_ id: String, reason: String) -> Bool {
        guard let viewer = state.withLock({ $0.viewers[id] }) else { return false }
        // The last counters while it is still listed (a closed peer has none).
        if let last = viewer.peer.statistics() { viewer.tracking.withLock { $0.statistics = last } }
        let moved = state.withLock { state -> WebRTCPeerStatistics? in
            guard state.viewers.removeValue(forKey: id) != nil else { return nil }
            let last = viewer.tracking.withLock { $0.statistics }
            state.ended[viewer.camera, default: Totals()].viewers += 1
            state.ended[viewer.camera, default: Totals()].bytesSent += last.bytesSent
            state.ended[viewer.camera, default: Totals()].packetsSent += last.packetsSent
            state.ended[viewer.camera, default: Totals()].packetsLost += last.packetsLost
            state.endReasons[reason, default: 0] += 1
            return last
        }
        guard let moved else { return false }
        viewer.close()
        left(viewer, reason, moved)
        return true
    }

    /// Ends every viewer and takes no more.
    func close() {
        let ids = state.withLock { state in
            state.closed = true
            return Array(state.viewers.keys)
        }
        for id in ids { end(id, reason: "shutdown") }
        sweeper.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    private func startSweeping() {
        sweeper.withLock { timer in
            guard timer == nil else { return }
            let made = DispatchSource.makeTimerSource(queue: queue)
            made.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1), leeway: .milliseconds(100))
            made.setEventHandler { [weak self] in self?.sweep() }
            made.resume()
            timer = made
        }
    }

    /// Reads every peer and ends those that are gone.
    func sweep() {
        let now = MonotonicClock.nowNanoseconds()
        for viewer in all {
            let peerState = viewer.peer.state
            let statistics = viewer.peer.statistics()
            let (since, connected, cameraEnded, silent) = viewer.tracking.withLock { tracking in
                if tracking.state != peerState {
                    tracking.state = peerState
                    tracking.since = now
                    if peerState == .connected, tracking.connectedAt == nil {
                        tracking.connectedAt = now
                        tracking.lastProgress = now
                    }
                }
                if let statistics {
                    // Receiving more, or nothing sent that it could have received: not silent.
                    if statistics.receivedProgress != tracking.statistics.receivedProgress
                        || statistics.packetsSent == tracking.statistics.packetsSent { tracking.lastProgress = now }
                    tracking.statistics = statistics
                }
                // A disconnected viewer has its own time limit (ICE may come back).
                let silent = peerState == .connected && now - tracking.lastProgress >= Self.silenceTimeout
                return (tracking.since, tracking.connectedAt != nil, tracking.ended, silent)
            }
            let reason: String?
            switch peerState {
            case .failed: reason = "failed"
            case .closed: reason = "closed"
            case .disconnected where now - since >= Self.disconnectedTimeout: reason = "disconnected"
            case .new where !connected && now - viewer.created >= Self.connectTimeout,
                 .connecting where !connected && now - viewer.created >= Self.connectTimeout: reason = "no-connection"
            default:
                if cameraEnded { reason = "camera-ended" }
                else if statistics?.saidGoodbye == true { reason = "closed" }
                else if silent { reason = "silent" }
                else { reason = nil }
            }
            if let reason { end(viewer.id, reason: reason) }
        }
    }
}
