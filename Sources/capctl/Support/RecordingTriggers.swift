import CaptureKit
import Foundation

/// What pauses and resumes a recording besides the user's signals: the
/// start (--start-paused) and a motion detector (--resume-on motion). It
/// remembers why it asked, so that the `paused` and `resumed` events say
/// what caused them.
final class RecordingTriggers: MotionDetectorDelegate, @unchecked Sendable {
    // @unchecked: the causes are guarded by `lock`; everything else is set in init.
    private let lock = NSLock()
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

    func pause(_ cause: PauseCause) {
        lock.withLock {
            pauseCause = cause
            resumeCause = nil
        }
        output?.pauseRecording()
    }

    func resume(_ cause: PauseCause) {
        lock.withLock {
            resumeCause = cause
            pauseCause = nil
        }
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
        // A recording that is not paused ignores it.
        resume(.motion)
    }

    func motionDetector(_ detector: MotionDetector, didEndMotionAt time: MediaTime, score: Double) {
        reporter.motion(started: false, score: score)
        pause(.still)
    }
}
