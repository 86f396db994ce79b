import CaptureKit
import Synchronization

/// One WHEP viewer: a peer fed by the camera's (and microphone's) encoded
/// packets. It receives on the encoders' threads and passes each packet on at
/// once; a keyframe the viewer asks for is asked of the camera's encoder.
package final class WebRTCViewer: EncodedMediaReceiver {
    package let id: String
    /// The camera's id (`video0` …) and the microphone's, if one is sent.
    package let camera: String
    package let microphone: String?
    let peer: any WebRTCPeer
    let created = MonotonicClock.nowNanoseconds()

    struct Tracking {
        var subscription: EncodedMediaSubscription?
        var state: WebRTCPeerState = .new
        /// When the state became what it is (nanoseconds on the capture clock).
        var since = MonotonicClock.nowNanoseconds()
        var connectedAt: Int64?
        var statistics = WebRTCPeerStatistics()
        /// When the viewer's reports last said it received more (nanoseconds on the capture clock).
        var lastProgress = MonotonicClock.nowNanoseconds()
        var videoFrames = 0
        var audioPackets = 0
        var ended = false
    }
    let tracking = Mutex(Tracking())

    init(id: String, camera: String, microphone: String?, peer: any WebRTCPeer) {
        self.id = id
        self.camera = camera
        self.microphone = microphone
        self.peer = peer
    }

    // MARK: EncodedMediaReceiver (encoder threads)

    package func receiveVideo(_ accessUnit: UnsafeRawBufferPointer, captureTime: Int64, isKeyframe: Bool) {
        peer.sendVideo(accessUnit, captureTime: captureTime, isKeyframe: isKeyframe)
        let subscription = tracking.withLock { tracking -> EncodedMediaSubscription? in
            tracking.videoFrames += 1
            return tracking.subscription
        }
        if peer.takeKeyframeRequest() { subscription?.requestKeyframe() }
    }

    package func receiveAudio(_ packet: UnsafeRawBufferPointer, captureTime: Int64, duration: Int64) {
        peer.sendAudio(packet, captureTime: captureTime, duration: duration)
        tracking.withLock { $0.audioPackets += 1 }
    }

    package func encodedMediaDidEnd() {
        tracking.withLock { $0.ended = true }
    }

    /// Stops taking packets and closes the peer.
    func close() {
        let subscription = tracking.withLock { tracking in
            defer { tracking.subscription = nil }
            return tracking.subscription
        }
        subscription?.cancel()
        peer.close()
    }
}
