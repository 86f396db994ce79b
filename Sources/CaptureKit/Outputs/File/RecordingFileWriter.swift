#if canImport(Glibc)
import Glibc
#endif

/// One file of a recording (with one file per camera, the files of every
/// camera cut at one time, as `parts`): its writers, a writer input per
/// capture input, and the bookkeeping that limits and statistics need.
/// Used only on the file output's writing thread.
final class RecordingFileWriter {
    /// The first part's path: the one requests and events name.
    let path: String
    let index: Int
    /// The files written together: one, or one per camera.
    let parts: [RecordingFilePart]
    /// The writer input for each capture input (by the input's position) in
    /// the first part holding it, nil for inputs this file leaves out; what
    /// frames and losses are counted on.
    let writerInputs: [AssetWriterInput?]
    /// Where the running writer session started (source time); nil while paused.
    var sessionStart: MediaTime?
    /// Where the file's first session started (source time): when its first sample was captured.
    var firstSessionStart: MediaTime?
    /// The latest session's start and, once it ended, its end (source time).
    var lastSession: (start: MediaTime, end: MediaTime?)?
    /// Media time of the sessions already ended.
    var closedDuration = MediaTime.zero
    /// The latest end (time + duration) of a sample written, on the source clock.
    var latestEnd: MediaTime?
    /// Where each camera's frames written so far end (by input position), on the source clock.
    var cameraEnds: [Int: MediaTime] = [:]
    /// When the latest video frame written of each camera (by input position) was captured.
    var lastVideoTimes: [Int: MediaTime] = [:]
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
    /// Of `audioSamples`, the silence the writer filled a jump in the stamps with.
    var silenceSamples = 0
    /// The audio inputs whose first sample into this file was looked at for
    /// audio lost before it (`FileRecording.markAudioLost`).
    var audioStartsSettled: Set<Int> = []
    var startedReported = false
    /// Whether a shared encoder was asked for the keyframe a size cut waits for.
    var askedForKeyframe = false
    /// Why the recording ended with this file, when a limit or a lost
    /// device ended it: what its `didFinishRecordingTo` reports (the file
    /// is complete all the same).
    var endError: RecordingError?
    /// The markers placed in it (see `FileRecording+Markers.swift`).
    var markers: [RecordingMarker] = []
    /// The largest growth of the estimated size from one video frame (or audio buffer) to the next.
    var largestStep: Int64 = 0
    var lastEstimate: Int64 = 0

    init(index: Int, parts: [RecordingFilePart], inputCount: Int) {
        self.path = parts[0].path
        self.index = index
        self.parts = parts
        writerInputs = (0..<inputCount).map { position in parts.lazy.compactMap { $0.writerInputs[position] }.first }
    }

    // MARK: Every part at once

    /// Whether a part is still being written.
    var isWriting: Bool { parts.contains { !$0.isFinished && $0.writer.status == .writing } }
    /// The first writer failure of a part.
    var writerError: WriterError? { parts.lazy.compactMap { $0.writer.error }.first }
    /// Bytes written to the parts not finished yet (those finished are counted with the files done).
    var bytesWritten: Int64 { parts.reduce(0) { $0 + ($1.isFinished ? 0 : $1.writer.bytesWritten) } }

    func startSession(atSourceTime time: MediaTime) throws(WriterError) {
        for part in parts where !part.isFinished { try part.writer.startSession(atSourceTime: time) }
    }

    func endSession(atSourceTime time: MediaTime) throws(WriterError) {
        for part in parts where !part.isFinished { try part.writer.endSession(atSourceTime: time) }
    }

    func cancelWriting() {
        for part in parts where !part.isFinished { part.writer.cancelWriting() }
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
        // Audio goes to every part (each camera's file has it); its
        // losses are counted once, on the first.
        for part in parts.dropFirst() where !part.isFinished {
            guard let writerInput = part.writerInputs[index], writerInput !== writerInputs[index], part.writer.status == .writing else { continue }
            var partLost = Lost()
            try append(sample, input: index, to: writerInput, part: part, lost: &partLost)
        }
        guard index < writerInputs.count, let writerInput = writerInputs[index],
              let part = parts.first(where: { $0.writerInputs[index] === writerInput }),
              !part.isFinished, part.writer.status == .writing else { return lost }
        try append(sample, input: index, to: writerInput, part: part, lost: &lost)
        return lost
    }

    /// Writes a sample of input `index` through `writerInput` of `part`, counting what is in it.
    private func append(_ sample: SampleBuffer, input index: Int, to writerInput: AssetWriterInput, part: RecordingFilePart,
                        lost: inout Lost) throws(WriterError) {
        // Before the first session, and while paused, only what was captured
        // before the pause and is still on its way is written: audio, and
        // another camera's frames (a pause takes effect at one camera's frame).
        let beforePause: Bool
        if sessionStart == nil, let pauseCut = lastSession?.end, sample.presentationTime < pauseCut {
            beforePause = true
        } else {
            beforePause = false
        }
        guard sessionStart != nil || cutTime != nil || beforePause else { return }
        do throws(WriterError) {
            switch sample {
            case .video(let video):
                if let start = sessionStart, video.presentationTime < start, cutTime == nil { return }
                if let cut = cutTime, video.presentationTime >= cut { return }
                let inSession = countingSession.map { session in
                    video.presentationTime >= session.start && session.end.map({ video.presentationTime < $0 }) ?? true
                } ?? false
                if inSession {
                    videoSamplesTaken += 1
                    part.videoSamplesTaken += 1
                }
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
                guard inSession, written > 0 else { return }
                videoFrames += written
                part.videoFrames += written
                // A frame shows for its duration, or, from a camera that does
                // not say, as long as the one before it did: a cut at the end
                // of what was written keeps the last frame on screen.
                let shown = video.duration?.nanoseconds ?? lastVideoTimes[index].map { video.presentationTime - $0 } ?? .zero
                lastVideoTimes[index] = video.presentationTime
                let end = video.presentationTime + (shown.isNumeric && shown > .zero ? shown : .zero)
                if latestEnd.map({ end > $0 }) ?? true { latestEnd = end }
                if cameraEnds[index].map({ end > $0 }) ?? true { cameraEnds[index] = end }
            case .audio(let audio):
                let before = Self.audioCounts(CollectionOfOne(writerInput))
                try writerInput.appendAudio(audio.bytes, format: audio.format, channels: audio.channels, sampleRate: audio.sampleRate,
                                            presentationTime: audio.presentationTime)
                // What the writer put in, counted in every file that holds it:
                // the part of the buffer in any of the file's sessions (a
                // buffer still on its way when the next stretch began goes into
                // the stretch it was captured in).
                countAudio(since: before, of: CollectionOfOne(writerInput), in: part)
                if let session = countingSession {
                    let to = min(audio.presentationTime + audio.duration, session.end ?? .positiveInfinity)
                    if to > max(audio.presentationTime, session.start), latestEnd.map({ to > $0 }) ?? true { latestEnd = to }
                }
            }
        } catch {
            var refused = false
            if case .invalidSettings = error { refused = true }
            if case .damagedSample = error { refused = true }
            if case .invalidState = error, part.writer.status == .writing { refused = true }
            guard refused else { throw error }
            switch sample {
            case .video: lost.refused = 1
            case .audio(let audio): lost.refused = audio.frameCount
            }
        }
    }


    /// The audio sample frames `inputs` have put into their files, and of them the silence.
    /// (A sequence, so that one buffer's input goes as `CollectionOfOne`: no array for every buffer.)
    static func audioCounts(_ inputs: some Sequence<AssetWriterInput>) -> (samples: Int, silence: Int) {
        inputs.reduce((samples: 0, silence: 0)) { total, input in
            let counts = input.writtenAudioCounts
            return (total.samples + counts.samples, total.silence + counts.silence)
        }
    }

    /// Counts into `part` (and this file) the audio `inputs` put in since their counts were `before`.
    func countAudio(since before: (samples: Int, silence: Int), of inputs: some Sequence<AssetWriterInput>, in part: RecordingFilePart) {
        let after = Self.audioCounts(inputs)
        part.audioSamples += after.samples - before.samples
        audioSamples += after.samples - before.samples
        part.silenceSamples += after.silence - before.silence
        silenceSamples += after.silence - before.silence
    }

    /// The files' size so far, on disk or as the writers estimate it once finalized.
    var estimatedSize: Int64 { parts.reduce(0) { $0 + ($1.isFinished ? 0 : $1.estimatedSize) } }
    /// The bytes the parts not finished yet hold on disk now (a system call
    /// per part): what the volume's free space already counts.
    var sizeOnDisk: Int64 { parts.reduce(0) { $0 + ($1.isFinished ? 0 : RecordingFileWriter.size(of: $1.path)) } }
    /// The largest part's size so far (what a segment size limits: each file).
    var largestPartSize: Int64 { parts.map(\.estimatedSize).max() ?? 0 }

    static func size(of path: String) -> Int64 {
        (try? Posix.lstat(path)).map { Int64($0.st_size) } ?? 0
    }
}


/// One file of a `RecordingFileWriter`: all the recording's inputs, or,
/// with one file per camera, one camera and every audio input.
final class RecordingFilePart {
    let path: String
    let writer: AssetWriter
    /// Its writer input for each capture input it holds, by the input's position.
    let writerInputs: [Int: AssetWriterInput]
    /// The camera whose file it is (its input position); nil for a file of every camera.
    let camera: Int?
    /// Video frames and audio sample frames put into it (in a session),
    /// and the video frames handed to it (one that was handed frames and
    /// wrote none lost them; one handed none has no picture, no error).
    var videoFrames = 0
    var audioSamples = 0
    var silenceSamples = 0
    var videoSamplesTaken = 0
    /// Finished (with one file per camera, maybe ahead of the others: its camera went away).
    /// From then on no retention counts it as being written.
    var isFinished = false {
        didSet { if isFinished { releaseInUse() } }
    }
    private var listedInUse = true
    /// For a part finished ahead of the others, the media time it holds.
    var endDuration: MediaTime?
    /// Whether the writer removed the file for holding nothing decodable:
    /// it is listed nowhere and its time is in no reported duration.
    var wasRemoved = false

    init(path: String, writer: AssetWriter, writerInputs: [Int: AssetWriterInput], camera: Int?) {
        self.path = path
        self.writer = writer
        self.writerInputs = writerInputs
        self.camera = camera
        RecordingFilesInUse.add(path)
    }

    deinit { releaseInUse() }

    /// Takes the file off the list of those being written (once).
    private func releaseInUse() {
        guard listedInUse else { return }
        listedInUse = false
        RecordingFilesInUse.remove(path)
    }

    var estimatedSize: Int64 { writer.status == .writing ? writer.estimatedFinalSize : RecordingFileWriter.size(of: path) }
}
