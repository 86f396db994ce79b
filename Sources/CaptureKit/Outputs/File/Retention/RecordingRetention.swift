/// Which of a loop recording's files are kept: a recording in a series of
/// files (segments, or a file per event) that deletes its oldest files as
/// it goes, as a dashcam does.
///
/// The recording's files are every regular file in the template's folder
/// whose name the template could have produced (see
/// `FileNameTemplate.match(fileName:)`): those already there when the
/// recording starts (an earlier run's) and those it finishes. Once a file
/// is finished (and, for `maxAge`, once a second), the oldest files beyond
/// a bound are deleted. A file being written (this recording's, or another
/// recording's in the same process) is never deleted, and neither is any
/// file the template could not have produced.
///
/// Oldest means: files already there before the recording started come
/// first, ordered by the time their name holds (its strftime fields, from
/// the year down to the second; `%s` first), then by their number (`%n`,
/// or the `-N` a template without `%n` adds), then by their camera and
/// their last modification; the recording's own files follow in the order
/// it finished them.
///
/// With a retention, a template with `%n` also numbers on from the
/// highest number its files in the folder have, so that a recording
/// started again continues the series instead of refusing its first name.
public struct RecordingRetention: Sendable, Hashable {
    /// Keep at most this many finished files (the newest); nil for no bound.
    /// With one file per camera, each camera's file counts.
    public var maxFiles: Int?
    /// Keep the finished files within this many bytes together (the
    /// newest that fit; the file just finished stays even when it alone
    /// passes the bound); nil for no bound. The file being written comes on
    /// top.
    public var maxBytes: Int64?
    /// Delete files last written longer ago than this (by their
    /// modification time); nil for no bound.
    public var maxAge: MediaTime?
    /// What the output's free-space floor (`minFreeDiskSpaceLimit`) does.
    public var lowSpace: RecordingLowSpacePolicy = .stop

    public init(maxFiles: Int? = nil, maxBytes: Int64? = nil, maxAge: MediaTime? = nil, lowSpace: RecordingLowSpacePolicy = .stop) {
        self.maxFiles = maxFiles
        self.maxBytes = maxBytes
        self.maxAge = maxAge
        self.lowSpace = lowSpace
    }

    /// Whether it deletes anything at all (a bound, or deleting at low space).
    public var isActive: Bool { maxFiles != nil || maxBytes != nil || maxAge != nil || lowSpace == .deleteOldest }

    /// Why a recording with this retention cannot be made with `template`
    /// (nil when it can): it needs a series of files (`series`: segments or a
    /// file per event) whose names tell them apart (`%n` or strftime fields
    /// in the file's name, not in its folder), and bounds that keep a file.
    public func problem(template: FileNameTemplate?, series: Bool) -> String? {
        guard isActive else { return nil }
        if let maxFiles, maxFiles < 1 { return "a retention keeps at least one file" }
        if let maxBytes, maxBytes <= 0 { return "a retention's size bound must be above 0" }
        if let maxAge, !(maxAge.isNumeric && maxAge > .zero) { return "a retention's age bound must be above 0" }
        guard let template, template.hasCounter || template.hasTimeFields else {
            return "a retention tells its files by their names: the template needs %n or strftime fields"
        }
        guard template.folderPart != nil else {
            return "a retention looks for its files in the template's folder: put %n and strftime fields in the file's name, not in its folder"
        }
        guard series else { return "a retention deletes the oldest of a series of files: record in segments or a file per event" }
        return nil
    }
}

/// What a recording does when the volume's free space reaches its floor
/// (`CaptureFileOutput.minFreeDiskSpaceLimit`).
public enum RecordingLowSpacePolicy: Sendable, Hashable {
    /// Stop the recording (`RecordingStopReason.minFreeSpace`).
    case stop
    /// Delete the recording's oldest files (see `RecordingRetention`) until
    /// the floor is kept, and go on; stop as with `stop` once only the
    /// files being written are left.
    case deleteOldest
}

/// Why a recording deleted one of its files.
public enum RecordingFileDeletionReason: Sendable, Hashable {
    /// Newer files filled `RecordingRetention.maxFiles`.
    case maxFiles
    /// Newer files filled `RecordingRetention.maxBytes`.
    case maxBytes
    /// It was last written longer ago than `RecordingRetention.maxAge`.
    case maxAge
    /// The free-space floor was reached (`RecordingLowSpacePolicy.deleteOldest`).
    case lowSpace
}
