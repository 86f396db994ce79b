import CapctlCommands

/// What makes WebRTC peers for the service's WHEP viewers: GStreamer's
/// webrtcbin in capctl-serve (`CapctlWebRTC`), a stand-in in tests. The
/// service hands each peer the packets of its shared encoders; the peer does
/// ICE, DTLS, SRTP and RTP.
package protocol WebRTCPeering: Sendable {
    /// A peer answering `offer` (SDP), sending H.264 (and Opus when
    /// `withAudio`), and its answer (SDP with its ICE candidates).
    func makePeer(offer: String, withAudio: Bool, audioChannels: Int) throws(WebRTCPeerError) -> (peer: any WebRTCPeer, answer: String)
}

/// One viewer's connection. Every call may come from any thread.
package protocol WebRTCPeer: AnyObject, Sendable {
    func sendVideo(_ accessUnit: UnsafeRawBufferPointer, captureTime: Int64, isKeyframe: Bool)
    func sendAudio(_ packet: UnsafeRawBufferPointer, captureTime: Int64, duration: Int64)
    /// Whether the viewer asked for a keyframe (RTCP PLI or FIR) since the last call.
    func takeKeyframeRequest() -> Bool
    var state: WebRTCPeerState { get }
    /// What RTP and RTCP say of the connection now (nil if the peer did not answer in time).
    func statistics() -> WebRTCPeerStatistics?
    /// Ends the connection; nothing is sent afterwards. Safe to call twice.
    func close()
}

/// The peer connection's state, as RTCPeerConnection names it.
package enum WebRTCPeerState: String, Sendable, Encodable {
    case new, connecting, connected, disconnected, failed, closed
}

/// A peer's counters (both tracks together).
package struct WebRTCPeerStatistics: Sendable, Equatable {
    package var bytesSent: Int64 = 0
    package var packetsSent: Int64 = 0
    /// Packets the viewer reported lost (RTCP receiver reports).
    package var packetsLost: Int64 = 0
    /// The round trip RTCP measured, in seconds (nil before the first report).
    package var roundTripTime: Double?
    /// Grows while the viewer's receiver reports say it receives (the highest
    /// sequence numbers they name, summed over the tracks).
    package var receivedProgress: Int64 = 0
    /// The viewer said RTCP BYE.
    package var saidGoodbye = false

    package init(bytesSent: Int64 = 0, packetsSent: Int64 = 0, packetsLost: Int64 = 0, roundTripTime: Double? = nil) {
        self.bytesSent = bytesSent
        self.packetsSent = packetsSent
        self.packetsLost = packetsLost
        self.roundTripTime = roundTripTime
    }
}

/// Why a peer was not made.
package enum WebRTCPeerError: Error, Sendable, Equatable {
    /// The offer cannot be served (not SDP, no H.264 the service can send): the client's fault.
    case refused(String)
    /// WebRTC could not start here (GStreamer missing, the pipeline failed).
    case failed(String)

    package var message: String {
        switch self {
        case .refused(let reason), .failed(let reason): return reason
        }
    }
}
