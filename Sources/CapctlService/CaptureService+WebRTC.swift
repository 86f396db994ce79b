import CapctlCommands
import CaptureKit

extension CaptureService {
    /// What `POST /devices/{id}/whep` answers: the SDP answer and the viewer's resource.
    package struct WHEPAnswer: Sendable {
        package var id: String
        package var sdp: String
    }

    /// A viewer's part of `/session`.
    package struct WebRTCViewerDocument: Encodable, Sendable {
        package var id: String
        package var camera: String
        package var microphone: String?
        package var state: WebRTCPeerState
        /// Seconds since it connected (nil before).
        package var connectedFor: Double?
        package var framesSent: Int
        package var audioPacketsSent: Int
        package var bytesSent: Int64
        package var packetsSent: Int64
        package var packetsLost: Int64
        package var roundTripTime: Double?
    }

    /// Answers a WHEP offer for camera `id`: a viewer of its H.264 and of a
    /// microphone's Opus (`audio`: a microphone's id, "none", or nil for the
    /// first microphone).
    package func startWebRTCView(camera id: String, audio: String?, offer: String) throws(ServiceError) -> WHEPAnswer {
        guard let peering = webRTCPeering else {
            throw ServiceError(.unavailable, "WebRTC is not available: \(webRTCUnavailableReason ?? "turned off (--no-webrtc)"); watch /stream.mjpg instead")
        }
        let camera = try input(id)
        guard camera.mediaType == .video else {
            throw ServiceError(.notFound, "device \(id) is a microphone; GET /devices lists the cameras (mediaType video)")
        }
        var microphone: CaptureInput?
        switch audio {
        case "none": microphone = nil
        case let id?:
            microphone = try input(id)
            guard microphone?.mediaType == .audio else { throw ServiceError(.badRequest, "audio=\(id) is a camera; name a microphone, or none") }
        case nil: microphone = inputs.first { $0.mediaType == .audio }
        }
        guard webRTCViewers.reserve(limit: configuration.maxViewers) else {
            throw ServiceError(.unavailable, "\(configuration.maxViewers) WebRTC viewers are watching, the most this service takes (--max-viewers); try again later")
        }
        var placed = false
        defer { if !placed { webRTCViewers.release() } }
        let channels = min(max(microphone?.source.audioFormat?.channels ?? 1, 1), 2)
        let made: (peer: any WebRTCPeer, answer: String)
        do throws(WebRTCPeerError) {
            made = try peering.makePeer(offer: offer, withAudio: microphone != nil, audioChannels: channels)
        } catch {
            switch error {
            case .refused(let reason): throw ServiceError(.badRequest, reason)
            case .failed(let reason): throw ServiceError(.unavailable, "WebRTC could not start: \(reason)")
            }
        }
        // Named as /metrics names cameras: by their place ("0", never "00" or "+0").
        let cameraID = inputs.firstIndex { $0 === camera }.map(String.init) ?? id
        let viewer = WebRTCViewer(id: Self.viewerID(), camera: cameraID, microphone: microphone.flatMap { mic in inputs.firstIndex { $0 === mic }.map(String.init) },
                                  peer: made.peer)
        do {
            let subscription = try encodedMedia.subscribe(viewer, camera: camera, microphone: microphone)
            viewer.tracking.withLock { $0.subscription = subscription }
        } catch {
            made.peer.close()
            throw ServiceError(.unavailable, "the camera's encoder does not start: \(error)")
        }
        placed = true
        guard webRTCViewers.add(viewer) else {
            viewer.close()
            throw ServiceError(.unavailable, "the service is stopping")
        }
        events.publish(WebRTCViewerEvent(event: "viewer-joined", time: EventTime.now(), id: viewer.id, camera: viewer.camera,
                                         microphone: viewer.microphone))
        return WHEPAnswer(id: viewer.id, sdp: made.answer)
    }

    /// Ends a WHEP viewer (its DELETE).
    package func endWebRTCView(_ id: String) throws(ServiceError) {
        guard webRTCViewers.end(id, reason: "deleted") else {
            throw ServiceError(.notFound, "no WebRTC viewer '\(id)'; it has ended or never was")
        }
    }

    package var webRTCViewerDocuments: [WebRTCViewerDocument] { documents(of: webRTCViewers.all) }

    func documents(of viewers: [WebRTCViewer]) -> [WebRTCViewerDocument] {
        let now = MonotonicClock.nowNanoseconds()
        return viewers.map { viewer in
            viewer.tracking.withLock { tracking in
                WebRTCViewerDocument(id: viewer.id, camera: viewer.camera, microphone: viewer.microphone, state: tracking.state,
                                     connectedFor: tracking.connectedAt.map { Double(now - $0) / 1e9 },
                                     framesSent: tracking.videoFrames, audioPacketsSent: tracking.audioPackets,
                                     bytesSent: tracking.statistics.bytesSent, packetsSent: tracking.statistics.packetsSent,
                                     packetsLost: tracking.statistics.packetsLost, roundTripTime: tracking.statistics.roundTripTime)
            }
        }
    }

    /// 128 random bits in hex: a resource URL no one guesses.
    private static func viewerID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}

/// `viewer-joined` and `viewer-left`, on stdout and to /events.
struct WebRTCViewerEvent: Encodable {
    var event: String
    var time: String
    var transport = "webrtc"
    var id: String
    var camera: String
    var microphone: String?
    var reason: String?
    var bytesSent: Int64?
    var packetsLost: Int64?
}
