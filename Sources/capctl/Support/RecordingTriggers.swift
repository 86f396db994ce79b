import CaptureKit
import FoundationEssentials

/// What pauses and resumes a recording besides the user's signals: the
/// start (--start-paused) and a motion detector (--resume-on motion). It
/// remembers why it asked, so that the `paused` and `resumed` events say
/// what caused them.
final class RecordingTriggers: MotionDetectorDelegate, @unchecked Sendable {
    // @unchecked: the causes are guarded by `lock`; everything else is set in init.
    private let lock = Lock()
    private var pauseCause: PauseCause?
    private var resumeCause: PauseCause?
    private weak var output: CaptureFileOutput?
    private let reporter: RecordingReporter
    /// The detector to add to the session (its `output`), with --resume-on motion.
    let detector: MotionDetector?

    init(options: TriggerOptions, output: CaptureFileOutput, reporter: RecordingReporter) {
        self.output = output
        self.reporter = reporter
        detector = options.motionConfiguration.map { MotionDetector(configuration: $0) }
        detector?.setDelegate(self)
    }

    /// Asks for a pause, remembering `cause` for the `paused` event. Each
    /// kind keeps its own cause: a resume waiting for its keyframe and a
    /// pause asked for meanwhile both take effect, each with its own cause.
    func pause(_ cause: PauseCause) {
        lock.withLock { pauseCause = cause }
        output?.pauseRecording()
    }

    /// Asks for a resume, remembering `cause` for the `resumed` event.
    func resume(_ cause: PauseCause) {
        lock.withLock { resumeCause = cause }
        output?.resumeRecording()
    }

    /// Why the recording paused just now (a signal unless a trigger asked).
    func takePauseCause() -> PauseCause {
        lock.withLock {
            defer { pauseCause = nil }
            return pauseCause ?? .signal
        }
    }

    /// Why the recording resumed just now.
    func takeResumeCause() -> PauseCause {
        lock.withLock {
            defer { resumeCause = nil }
            return resumeCause ?? .signal
        }
    }

    // MARK: MotionDetectorDelegate

    func motionDetector(_ detector: MotionDetector, didStartMotionAt time: MediaTime, score: Double) {
        reporter.motion(started: true, score: score)
        // A recording that is not paused has nothing to resume: no cause is
        // left behind to be taken by a later resume from a signal.
        guard output?.isRecordingPaused == true else { return }
        resume(.motion)
    }

    func motionDetector(_ detector: MotionDetector, didEndMotionAt time: MediaTime, score: Double) {
        reporter.motion(started: false, score: score)
        guard output?.isRecordingPaused == false else { return }
        pause(.still)
    }
}
