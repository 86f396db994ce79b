/// A file output's motion trigger: hears its `MotionDetector` and turns
/// motion into resumes and stillness into pauses of the output's
/// recording, telling the recording's delegate what it saw. Holds the
/// output weakly (the output holds it).
final class MotionTriggerLink: MotionDetectorDelegate, Sendable {
    let detector: MotionDetector
    private weak let output: CaptureFileOutput?

    init(detector: MotionDetector, output: CaptureFileOutput) {
        self.detector = detector
        self.output = output
        detector.setDelegate(self)
    }

    /// The detector reads luma from the first camera's raw pictures:
    /// without a camera, or with one that sends others, the recording
    /// cannot be triggered, and is refused before any file is made.
    func check(_ inputs: [CaptureInput]) throws(RecordingError) {
        guard let camera = inputs.first(where: { $0.mediaType == .video }) else { throw .motionNeedsCamera }
        guard let layout = camera.videoFormat?.layout, !MotionDetector.canAnalyze(layout) else { return }
        switch layout {
        case .compressed(let codec): throw .motionCannotRead(device: camera.source.path, sends: codec)
        case .raw(let format, _): throw .motionCannotRead(device: camera.source.path, sends: "\(format.name) pictures")
        }
    }

    func motionDetector(_ detector: MotionDetector, didStartMotionAt time: MediaTime, score: Double) {
        output?.withRecordingDelegate { $1.fileOutput($0, didDetectMotionAt: time, score: score) }
        // A recording that runs has nothing to resume.
        output?.motionTriggered(resume: true)
    }

    func motionDetector(_ detector: MotionDetector, didEndMotionAt time: MediaTime, score: Double) {
        output?.withRecordingDelegate { $1.fileOutput($0, didEndMotionAt: time, score: score) }
        output?.motionTriggered(resume: false)
    }
}
