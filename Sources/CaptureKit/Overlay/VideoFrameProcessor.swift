/// Changes an input's video frames once, on its capture thread, before any
/// output sees them (`CaptureInput.videoFrameProcessor`), so that the file,
/// streams, photos and live views of that input all get the same frame.
///
/// Capture buffers are lent and read-only: a processor that changes a frame
/// returns a new one (in memory of its own) and leaves the one given alone.
/// It runs on the capture thread for every frame, so it must be quick.
public protocol VideoFrameProcessor: Sendable {
    /// The frame outputs get in place of `frame` (`frame` itself to leave it as it is).
    func process(_ frame: VideoSampleBuffer) -> VideoSampleBuffer
    /// Whether it can change frames of `format`; the session refuses to
    /// start an input whose format it cannot (`CaptureError.processorCannotTake`).
    func canProcess(_ format: CaptureVideoFormat) -> Bool
}
