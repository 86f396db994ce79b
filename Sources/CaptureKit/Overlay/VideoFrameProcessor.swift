/// Changes an input's video frames once, on its capture thread, before any
/// output sees them (`CaptureInput.videoFrameProcessor`), so that the file,
/// streams, photos and live views of that input all get the same frame.
///
/// Capture buffers are lent and read-only: a processor that changes a frame
/// returns a new one (in memory of its own) and leaves the one given alone.
/// It runs on the capture thread for every frame, so it must be quick.
/// A processor may change the frames' format (a camera's compressed frames
/// decoded to draw into them): outputs see the format it answers for the
/// source's (`CaptureInput.videoFormat`).
package protocol VideoFrameProcessor: Sendable {
    /// The format of the frames `process` returns for frames of `format`,
    /// or nil when it cannot take them: the session then refuses to start
    /// the input (`CaptureError.processorCannotTake`).
    func outputFormat(for format: CaptureVideoFormat) -> CaptureVideoFormat?
    /// The frame outputs get in place of `frame` (`frame` itself to leave it
    /// as it is), or nil to leave it out: a compressed frame that cannot be
    /// decoded (before a stream's first keyframe, or damaged). `format` is
    /// the source's.
    func process(_ frame: VideoSampleBuffer, of format: CaptureVideoFormat) -> VideoSampleBuffer?
    /// Frames it left out that outputs should count as lost (damaged ones),
    /// at their capture times; nil when it leaves none out.
    var losses: SampleLossLog? { get }
}

extension VideoFrameProcessor {
    /// None: a processor that leaves no frame out.
    package var losses: SampleLossLog? { nil }
}
