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

    func validate() throws {
        if let keepFiles, keepFiles < 1 {
            throw ValidationError("--keep-files \(keepFiles) would keep no file; give 1 or more")
        }
        if let keepSize, keepSize.bytes < 64 * 1024 {
            throw ValidationError("--keep-size \(keepSize) is too small for a file; use at least 64K")
        }
    }

    /// The first retention option given, as the command line names it (nil: none).
    private var given: String? {
        if keepFiles != nil { return "--keep-files" }
        if keepSize != nil { return "--keep-size" }
        if keepAge != nil { return "--keep-age" }
        return onLowSpace == .rotate ? "--on-low-space rotate" : nil
    }

    /// Checks the options against OUT and the other options: a retention
    /// needs a series of files (`series`: segments or a file per event) whose
    /// names tell them apart, in one folder.
    func validate(out: String?, series: Bool, segmentSize: ByteCountArgument?, minFreeSpace: ByteCountArgument) throws {
        guard let option = given else { return }
        guard let out else { throw ValidationError("\(option) deletes files of a recording; give OUT too") }
        // A template that is not one says why when the recording is made.
        guard let template = try? FileNameTemplate(out) else { return }
        guard template.hasCounter || template.hasTimeFields else {
            throw ValidationError("\(option) tells the recording's files by their names: OUT needs %n or time fields, such as 'rec-%3n.mp4' or 'rec-%Y%m%d-%H%M%S.mp4'")
        }
        if let slash = out.lastIndex(of: "/"), out[..<slash].contains("%") {
            throw ValidationError("\(option) looks for the recording's files in OUT's folder: put %n and time fields in the file's name, not its folder")
        }
        guard series else {
            throw ValidationError("\(option) deletes the oldest files of a series: add --segment-duration, --segment-size or --file-per-event")
        }
        if onLowSpace == .rotate && minFreeSpace.bytes == 0 {
            throw ValidationError("--on-low-space rotate acts at the --min-free-space floor, which 0 turns off; give a floor such as --min-free-space 1G")
        }
        if let keepSize, let segmentSize, keepSize.bytes < segmentSize.bytes {
            throw ValidationError("--keep-size \(keepSize) cannot hold one --segment-size \(segmentSize) file; give a larger --keep-size")
        }
    }

    /// The retention these options ask for.
    var retention: RecordingRetention {
        RecordingRetention(maxFiles: keepFiles, maxBytes: keepSize?.bytes, maxAge: keepAge?.time,
                           lowSpace: onLowSpace == .rotate ? .deleteOldest : .stop)
    }
}

/// What `--on-low-space` does at the free-space floor.
enum LowSpaceAction: String, ExpressibleByArgument, CaseIterable {
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
