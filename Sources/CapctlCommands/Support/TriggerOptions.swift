import ArgumentParser
import CaptureKit

/// `record`'s options for pre-roll and triggered recording: start paused,
/// keep the media before a resume, resume and pause on motion, one file per event.
struct TriggerOptions: ParsableArguments {
    @Flag(name: .long, help: "Start paused: the devices run, no file is made until a resume (SIGUSR2, or motion with --resume-on).")
    var startPaused = false

    @Option(name: .long, help: ArgumentHelp("While paused, keep the last TIME of media in memory and write it first on resume.", valueName: "time"))
    var preRoll: DurationArgument?

    @Option(name: .long, help: ArgumentHelp("The most memory the pre-roll may hold (default 128MiB).", valueName: "size"))
    var preRollMemory: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("Resume on motion in the picture: PERCENT of it changed (default 1).", valueName: "motion[:percent]"))
    var resumeOn: ResumeTrigger?

    @Option(name: .long, help: ArgumentHelp("With --resume-on motion: pause once the picture has been still this long (default 5s).", valueName: "time"))
    var pauseAfterStill: DurationArgument?

    @Option(name: .long, help: ArgumentHelp("With --resume-on motion: motion must last this long to count (default 0).", valueName: "time"))
    var minEvent: DurationArgument?

    @Flag(name: .long, help: "Each pause finishes the file and the next resume starts a new one named by OUT's template (%n, strftime fields).")
    var filePerEvent = false
}

/// What `--resume-on` resumes a recording on.
package enum ResumeTrigger: ExpressibleByArgument, Sendable {
    /// Motion in the camera's picture; the share of it (percent) that must change.
    case motion(percent: Double?)

    package init?(argument: String) {
        let parts = argument.lowercased().split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.first == "motion" else { return nil }
        guard parts.count == 2 else {
            self = .motion(percent: nil)
            return
        }
        let text = parts[1].hasSuffix("%") ? parts[1].dropLast() : parts[1]
        guard let percent = Double(text), percent > 0, percent <= 100 else { return nil }
        self = .motion(percent: percent)
    }

    static var defaultValueDescription: String { "motion, or motion:PERCENT with PERCENT above 0 and up to 100" }
}

/// Why a recording paused or resumed, as events name it.
enum PauseCause: String, Encodable {
    /// --start-paused.
    case start
    /// SIGUSR1 or SIGUSR2.
    case signal
    /// Motion began (resume).
    case motion
    /// The picture stayed still (pause).
    case still

    init(_ cause: RecordingPauseCause) {
        switch cause {
        case .requested: self = .signal
        case .armed: self = .start
        case .motion: self = .motion
        case .stillness: self = .still
        }
    }
}
