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
    /// When the latest video frame written was captured.
    var lastVideoTime: MediaTime?
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
    /// Whether a shared encoder was asked for the keyframe a size cut waits for.
    var askedForKeyframe = false
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

    /// The session a sample written to the file counts in: the running one,
    /// or, for a sample still on its way when the file was paused or cut,
    /// the session that ended then.
    var countingSession: (start: MediaTime, end: MediaTime?)? {
        if let start = sessionStart { return (start, nil) }
        return lastSession.flatMap { last in last.end.map { (last.start, $0) } }
    }

    /// What appending lost: frames before a keyframe, and samples the
    /// writer refused (video frames; audio sample frames).
    struct Lost {
        var beforeKeyframe = 0
        var refused = 0
    }

    /// Writes a sample of input `index` into the file, counting what is in
    /// it as the writer puts it there. A sample the writer refuses (a
    /// damaged frame, one out of order) is lost, not the file: it comes back
    /// in `Lost`; anything else throws.
    func append(_ sample: SampleBuffer, input index: Int) throws(WriterError) -> Lost {
        var lost = Lost()
        guard writer.status == .writing, index < writerInputs.count, let writerInput = writerInputs[index] else { return lost }
        // Before the first session, and while paused, only audio captured
        // before the pause (still on its way) is written.
        let pausedAudio: Bool
        if case .audio(let audio) = sample, sessionStart == nil, let pauseCut = lastSession?.end, audio.presentationTime < pauseCut {
            pausedAudio = true
        } else {
            pausedAudio = false
        }
        guard sessionStart != nil || cutTime != nil || pausedAudio else { return lost }
        do throws(WriterError) {
            switch sample {
            case .video(let video):
                if let start = sessionStart, video.presentationTime < start, cutTime == nil { return lost }
                if let cut = cutTime, video.presentationTime >= cut { return lost }
                let inSession = countingSession.map { session in
                    video.presentationTime >= session.start && session.end.map({ video.presentationTime < $0 }) ?? true
                } ?? false
                if inSession { videoSamplesTaken += 1 }
                // Frames count as the writer puts them into the file: a frame
                // before a keyframe, or one a decoder holds, is not (yet) there.
                let before = (written: writerInput.writtenFrameCount, skipped: writerInput.framesSkippedBeforeKeyframe)
                defer { lost.beforeKeyframe = writerInput.framesSkippedBeforeKeyframe - before.skipped }
                switch video.layout {
                case .compressed:
                    if writerInput.takesCompressedSamples {
                        try writerInput.appendCompressed(video.bytes, keeping: video.storage, presentationTime: video.presentationTime,
                                                         decodeTime: video.decodeTime, duration: video.duration, isKeyframe: video.isKeyframe)
                    } else {
                        try writerInput.appendDecoding(video.bytes, presentationTime: video.presentationTime, duration: video.duration,
                                                       isKeyframe: video.isKeyframe)
                    }
                case .raw(let pixelFormat, let bytesPerRow):
                    try writerInput.appendPixels(video.bytes, format: pixelFormat, width: video.width, height: video.height,
                                                 bytesPerRow: bytesPerRow, presentationTime: video.presentationTime, duration: video.duration)
                }
                let written = writerInput.writtenFrameCount - before.written
                guard inSession, written > 0 else { return lost }
                videoFrames += written
                // A frame shows for its duration, or, from a camera that does
                // not say, as long as the one before it did: a cut at the end
                // of what was written keeps the last frame on screen.
                let shown = video.duration?.nanoseconds ?? lastVideoTime.map { video.presentationTime - $0 } ?? .zero
                lastVideoTime = video.presentationTime
                let end = video.presentationTime + (shown.isNumeric && shown > .zero ? shown : .zero)
                if latestEnd.map({ end > $0 }) ?? true { latestEnd = end }
            case .audio(let audio):
                try writerInput.appendAudio(audio.bytes, format: audio.format, channels: audio.channels, sampleRate: audio.sampleRate,
                                            presentationTime: audio.presentationTime)
                // The part of the buffer in the session it counts in.
                if let session = countingSession {
                    let from = max(audio.presentationTime, session.start)
                    let to = min(audio.presentationTime + audio.duration, session.end ?? .positiveInfinity)
                    if to > from { audioSamples += Int((to - from).converted(toTimescale: Int32(audio.sampleRate)).value) }
                    if latestEnd.map({ to > $0 }) ?? true { latestEnd = to }
                }
            }
        } catch {
            var refused = false
            if case .invalidSettings = error { refused = true }
            if case .damagedSample = error { refused = true }
            if case .invalidState = error, writer.status == .writing { refused = true }
            guard refused else { throw error }
            switch sample {
            case .video: lost.refused = 1
            case .audio(let audio): lost.refused = audio.frameCount
            }
        }
        return lost
    }


    /// The file's size so far, on disk or as the writer estimates it once finalized.
    var estimatedSize: Int64 { writer.status == .writing ? writer.estimatedFinalSize : Self.size(of: path) }

    static func size(of path: String) -> Int64 {
        (try? Posix.lstat(path)).map { Int64($0.st_size) } ?? 0
    }
}
