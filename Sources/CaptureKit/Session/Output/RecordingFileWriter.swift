#if canImport(Glibc)
import Glibc
#endif

/// One file of a recording: its writer, a writer input per capture input,
/// and the bookkeeping that limits and statistics need. Used only on the
/// file output's writing thread.
final class RecordingFileWriter {
    let path: String
    let index: Int
    let writer: AssetWriter
    /// The writer input for each capture input (by the input's position), nil for inputs this file leaves out.
    let writerInputs: [AssetWriterInput?]
    /// Where the running writer session started (source time); nil while paused.
    var sessionStart: MediaTime?
    /// The latest session's start and, once it ended, its end (source time).
    var lastSession: (start: MediaTime, end: MediaTime?)?
    /// Media time of the sessions already ended.
    var closedDuration = MediaTime.zero
    /// The latest end (time + duration) of a sample written, on the source clock.
    var latestEnd: MediaTime?
    /// Once set, the file is ending at this source time and waits for the
    /// inputs still listed in `awaiting` to pass it.
    var cutTime: MediaTime?
    var awaiting: Set<Int> = []
    var cutRequestedAt: Int64 = 0
    /// Video frames in the file (counted from what its writer inputs wrote)
    /// and video samples handed to it, in a session: a file that was handed
    /// frames and wrote none lost them.
    var videoFrames = 0
    var videoSamplesTaken = 0
    var audioSamples = 0
    var startedReported = false
    /// The largest growth of the estimated size from one video frame (or audio buffer) to the next.
    var largestStep: Int64 = 0
    var lastEstimate: Int64 = 0

    init(path: String, index: Int, writer: AssetWriter, writerInputs: [AssetWriterInput?]) {
        self.path = path
        self.index = index
        self.writer = writer
        self.writerInputs = writerInputs
    }

    /// Media time recorded in this file up to source time `now`.
    func duration(upTo now: MediaTime?) -> MediaTime {
        guard let start = sessionStart else { return closedDuration }
        let end = [now, latestEnd].compactMap { $0 }.filter(\.isNumeric).max() ?? start
        let running = end > start ? end - start : .zero
        return closedDuration + running
    }

    /// What the file's video inputs wrote and skipped (before a keyframe), summed.
    var videoWriterCounts: (written: Int, skipped: Int) {
        var written = 0, skipped = 0
        for case let input? in writerInputs where input.mediaType == .video {
            written += input.writtenFrameCount
            skipped += input.framesSkippedBeforeKeyframe
        }
        return (written, skipped)
    }

    /// The file's size so far, on disk or as the writer estimates it once finalized.
    var estimatedSize: Int64 { writer.status == .writing ? writer.estimatedFinalSize : Self.size(of: path) }

    static func size(of path: String) -> Int64 {
        var info = stat()
        return lstat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}
