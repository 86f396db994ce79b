import ArgumentParser
import CaptureKit

/// `record`'s options for loop recording: how many of a series' files are
/// kept, and what the free-space floor does.
struct RetentionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Loop recording: keep the newest N finished files of OUT's template, deleting older ones.", valueName: "n"))
    var keepFiles: Int?

    @Option(name: .long, help: ArgumentHelp("Loop recording: keep the finished files within SIZE together, deleting the oldest.", valueName: "size"))
    var keepSize: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("Loop recording: delete files last written more than TIME ago.", valueName: "time"))
    var keepAge: DurationArgument?

    @Option(name: .long, help: ArgumentHelp("At the --min-free-space floor: stop, or rotate (delete the oldest files of OUT's template and go on).",
                                            valueName: "stop|rotate"))
    var onLowSpace: LowSpaceAction = .stop
}

/// What `--on-low-space` does at the free-space floor.
package enum LowSpaceAction: String, ExpressibleByArgument, CaseIterable {
    /// Stop the recording (as without the option).
    case stop
    /// Delete the oldest files of the recording's template and go on.
    case rotate
}

extension RecordingFileDeletionReason {
    /// The reason as `file-deleted` events name it: the option whose bound it passed, or low-space.
    var word: String {
        switch self {
        case .maxFiles: return "keep-files"
        case .maxBytes: return "keep-size"
        case .maxAge: return "keep-age"
        case .lowSpace: return "low-space"
        }
    }
}
