import Synchronization

/// Where a capture session sends samples, like AVCaptureOutput. Subclasses
/// (`CaptureFileOutput`, photo outputs) take samples on the capture threads
/// in `capture(_:from:)`, which must return at once: queue and count, never
/// wait on an encoder.
public class CaptureOutput: @unchecked Sendable {
    // @unchecked: a class subclassed by the outputs cannot be checked Sendable. Its one
    // state, the connections, is behind a Mutex; each subclass restates the conformance with its own guarantee.
    public init() {}

    /// The connections (see `CaptureConnection`), kept by the session.
    let connectionList = Mutex<[CaptureConnection]>([])

    /// The media types this output takes, whose inputs it has connections to.
    public var connectedMediaTypes: Set<MediaType> { [.video, .audio] }

    /// The session is about to start running with these (opened) inputs, or
    /// this output was added to a session that runs with them.
    public func sessionWillStartRunning(inputs: [CaptureInput]) throws(CaptureError) {}

    /// Inputs were added to or removed from the running session: these are
    /// its inputs now.
    public func sessionDidChangeInputs(_ inputs: [CaptureInput]) {}

    /// One sample from `input`, on that input's capture thread.
    public func capture(_ sample: SampleBuffer, from input: CaptureInput) {}

    /// An input's capture loop ended by itself (end of file, device lost, failure).
    public func input(_ input: CaptureInput, didEnd end: CaptureEnd) {}

    /// The session stopped: every capture loop has ended and no more samples come.
    public func sessionDidStopRunning() {}
}
