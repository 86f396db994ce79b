/// A point of a recording marked while it ran ("the door opened"), as
/// `CaptureFileOutput.addMarker(title:)` placed it. Finished files carry
/// their markers as chapters (MP4, QuickTime, M4A, Matroska, WebM; see
/// `AssetWriter.writesChapters`) and list them in `RecordedFile.markers`.
public struct RecordingMarker: Sendable, Hashable {
    public var title: String
    /// Where it is in its file: media time from the file's start, pauses
    /// left out (the file's own timeline, where its chapter starts).
    public var time: MediaTime
    /// The file it lands in (with one file per camera, the first camera's;
    /// every camera's file gets it at the same time), and that file's
    /// position in the recording (1 for the first).
    public var path: String
    public var fileIndex: Int
    /// Where it is in the whole recording: media time over every file,
    /// pauses left out (as `CaptureFileOutput.recordedDuration` counts).
    public var recordingTime: MediaTime

    public init(title: String, time: MediaTime, path: String, fileIndex: Int, recordingTime: MediaTime) {
        self.title = title
        self.time = time
        self.path = path
        self.fileIndex = fileIndex
        self.recordingTime = recordingTime
    }

    /// The longest title in UTF-8 bytes: what an MP4 chapter holds.
    public static let maxTitleBytes = Chapters.maxTitleBytes
}

/// Why a marker was refused.
public enum RecordingMarkerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No recording is under way (none started, or it is stopping or over).
    case notRecording
    /// The recorder has no file to mark: it only streams.
    case noFile
    /// The title is empty (or only white space).
    case emptyTitle
    /// The title is longer than `RecordingMarker.maxTitleBytes` UTF-8 bytes.
    case titleTooLong(bytes: Int)
    /// The title holds a NUL character, which no chapter format can store.
    case titleHasNUL

    public var description: String {
        switch self {
        case .notRecording: return "no recording is under way"
        case .noFile: return "the recording writes no file (it only streams): there is nothing to mark"
        case .emptyTitle: return "a marker needs a title"
        case .titleTooLong(let bytes):
            return "a marker's title may hold at most \(RecordingMarker.maxTitleBytes) bytes of UTF-8; this one has \(bytes)"
        case .titleHasNUL: return "a marker's title cannot hold a NUL character"
        }
    }

    /// Checks a title as `addMarker(title:)` takes it.
    static func check(title: String) throws(RecordingMarkerError) {
        let bytes = title.utf8.count
        if title.allSatisfy(\.isWhitespace) { throw .emptyTitle }
        if bytes > RecordingMarker.maxTitleBytes { throw .titleTooLong(bytes: bytes) }
        if title.utf8.contains(0) { throw .titleHasNUL }
    }
}
