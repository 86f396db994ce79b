/// What takes a camera's compressed video and a microphone's encoded audio
/// from an `EncodedMediaOutput`: a WebRTC viewer, say. Its calls come on the
/// encoders' threads and must return at once (queue, never wait): every
/// receiver of a camera is handed the same packets in turn.
package protocol EncodedMediaReceiver: AnyObject, Sendable {
    /// One H.264 access unit (Annex B, parameter sets before each keyframe),
    /// captured at `captureTime` (nanoseconds on the capture clock). The first
    /// a receiver gets is a keyframe.
    func receiveVideo(_ accessUnit: UnsafeRawBufferPointer, captureTime: Int64, isKeyframe: Bool)
    /// One Opus packet of the microphone, its first sample captured at
    /// `captureTime` (nanoseconds on the capture clock), lasting `duration`.
    func receiveAudio(_ packet: UnsafeRawBufferPointer, captureTime: Int64, duration: Int64)
    /// Nothing more comes: the camera ended, its encoder failed, or the
    /// session stopped.
    func encodedMediaDidEnd()
}

/// One receiver's place at an `EncodedMediaOutput`: `cancel()` it to stop
/// taking packets (the last to leave a camera or microphone stops its encoder).
package final class EncodedMediaSubscription: Sendable {
    /// The camera and microphone it takes, by their places among the session's inputs.
    package let camera: CaptureInput
    package let microphone: CaptureInput?
    let receiver: any EncodedMediaReceiver
    private let leave: @Sendable (EncodedMediaSubscription) -> Void
    private let keyframe: @Sendable () -> Void

    init(camera: CaptureInput, microphone: CaptureInput?, receiver: any EncodedMediaReceiver,
         keyframe: @escaping @Sendable () -> Void, leave: @escaping @Sendable (EncodedMediaSubscription) -> Void) {
        self.camera = camera
        self.microphone = microphone
        self.receiver = receiver
        self.keyframe = keyframe
        self.leave = leave
    }

    /// Asks the camera's encoder for a keyframe (a viewer lost packets and
    /// asked for one); the next picture is encoded as one.
    package func requestKeyframe() { keyframe() }

    /// Stops taking packets. Safe to call more than once.
    package func cancel() { leave(self) }
}
