import CWebRTCPeer
import CapctlCommands
import CapctlService
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// WebRTC peers made by GStreamer's webrtcbin: ICE (libnice), DTLS and SRTP,
/// RTP and RTCP are its own; the service hands each peer the packets of its
/// shared encoders.
package struct GStreamerPeering: WebRTCPeering {
    package let settings: WebRTCSettings

    /// Peers made with `settings`. GStreamer is loaded at the first offer, not here: a service
    /// that no one watches over WebRTC never loads it.
    package static func make(settings: WebRTCSettings) -> Result<any WebRTCPeering, WebRTCPeerError> {
        .success(GStreamerPeering(settings: settings))
    }

    /// GStreamer loaded and its WebRTC elements checked, once: nil, or why WebRTC cannot run.
    private static let loaded: String? = {
        var message: UnsafeMutablePointer<CChar>?
        guard cw_initialize(&message) == 0 else {
            defer { cw_free(message) }
            return message.map { String(cString: $0) } ?? "GStreamer does not start"
        }
        return nil
    }()

    package func makePeer(offer: String, withAudio: Bool, audioChannels: Int) throws(WebRTCPeerError) -> (peer: any WebRTCPeer, answer: String) {
        if let problem = Self.loaded { throw .failed(problem) }
        var answer: UnsafeMutablePointer<CChar>?
        var error: UnsafeMutablePointer<CChar>?
        var refused: Int32 = 0
        let made = withCStrings(settings.turnServers) { turns in
            withCStrings(settings.localAddresses) { addresses in
                withOptionalCString(settings.stunServer) { stun in
                    var configuration = cw_config()
                    configuration.stun_server = stun
                    configuration.turn_servers = turns.baseAddress
                    configuration.turn_count = Int32(turns.count)
                    configuration.min_port = UInt32(settings.ports?.lowerBound ?? 0)
                    configuration.max_port = UInt32(settings.ports?.upperBound ?? 0)
                    configuration.addresses = addresses.baseAddress
                    configuration.address_count = Int32(addresses.count)
                    configuration.with_audio = withAudio ? 1 : 0
                    configuration.audio_channels = Int32(audioChannels)
                    configuration.gathering_timeout_ms = Int32(settings.gatheringTimeoutMilliseconds)
                    return cw_peer_create(offer, &configuration, &answer, &error, &refused)
                }
            }
        }
        defer {
            cw_free(answer)
            cw_free(error)
        }
        guard let made, let answer else {
            let reason = error.map { String(cString: $0) } ?? "webrtcbin failed"
            throw refused != 0 ? .refused(reason) : .failed(reason)
        }
        return (GStreamerPeer(made), String(cString: answer))
    }
}

/// One webrtcbin pipeline, freed when the last holder lets go: `close()`
/// drops the peer's own hold, and a push or a statistics request in progress
/// keeps it alive until it returns, so packets never wait on either.
final class GStreamerPeer: WebRTCPeer {
    private let handle: Mutex<PeerHandle?>

    init(_ peer: OpaquePointer) {
        handle = Mutex(PeerHandle(peer))
    }

    private var peer: PeerHandle? { handle.withLock { $0 } }

    func sendVideo(_ accessUnit: UnsafeRawBufferPointer, captureTime: Int64, isKeyframe: Bool) {
        guard let peer else { return }
        cw_peer_push_video(peer.pointer, accessUnit.baseAddress, accessUnit.count, captureTime, isKeyframe ? 1 : 0)
    }

    func sendAudio(_ packet: UnsafeRawBufferPointer, captureTime: Int64, duration: Int64) {
        guard let peer else { return }
        cw_peer_push_audio(peer.pointer, packet.baseAddress, packet.count, captureTime, duration)
    }

    func takeKeyframeRequest() -> Bool {
        peer.map { cw_peer_take_keyframe_request($0.pointer) != 0 } ?? false
    }

    var state: WebRTCPeerState {
        guard let peer else { return .closed }
        switch Int(cw_peer_connection_state(peer.pointer)) {
        case Int(CW_STATE_CONNECTING): return .connecting
        case Int(CW_STATE_CONNECTED): return .connected
        case Int(CW_STATE_DISCONNECTED): return .disconnected
        case Int(CW_STATE_FAILED): return .failed
        case Int(CW_STATE_CLOSED): return .closed
        default: return .new
        }
    }

    func statistics() -> WebRTCPeerStatistics? {
        guard let peer else { return nil }
        var stats = cw_stats()
        guard cw_peer_stats(peer.pointer, &stats, 500) == 0 else { return nil }
        var statistics = WebRTCPeerStatistics(bytesSent: Int64(stats.bytes_sent), packetsSent: Int64(stats.packets_sent),
                                              packetsLost: stats.packets_lost, roundTripTime: stats.has_round_trip != 0 ? stats.round_trip_seconds : nil)
        statistics.receivedProgress = Int64(clamping: stats.highest_received)
        statistics.saidGoodbye = stats.said_bye != 0
        return statistics
    }

    func close() {
        handle.withLock { $0 = nil }
    }
}

/// The C peer, destroyed with the last reference.
final class PeerHandle: @unchecked Sendable {
    // @unchecked: the pointer never changes, and every cw_peer_ call the holders make is
    // thread-safe (appsrc pushes, atomic flags, GObject property reads, promises); only
    // deinit destroys it, when no holder is left.
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// Where pipelines are stopped: the last reference can go on an encoder's thread (a push
    /// in progress when the viewer ended), which must not wait for ICE and DTLS to shut down.
    private static let teardown = DispatchQueue(label: "webrtc-peer-teardown")

    deinit {
        let pointer = Destroyable(pointer: pointer)
        Self.teardown.async { cw_peer_destroy(pointer.pointer) }
    }
}

/// The pointer on its way to the teardown queue, which alone uses it from then on.
private struct Destroyable: @unchecked Sendable {
    // @unchecked: handed from the last holder to the teardown queue, and used only there.
    let pointer: OpaquePointer
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// `texts` as C strings for the length of `body`.
private func withCStrings<R>(_ texts: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = texts.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) }
    return pointers.withUnsafeBufferPointer(body)
}
