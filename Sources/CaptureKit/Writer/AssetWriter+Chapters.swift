import CFFmpeg

/// Chapters: points marked on the file's timeline while it is written,
/// written as the file is finished.
///
/// - MP4, QuickTime, M4A made regular (written in one piece, or in
///   fragments that finishing makes one movie): a Nero 'chpl' box in the
///   movie's 'udta', which the writer puts into the movie box it writes
///   itself. (libavformat's own chapters would add a QuickTime chapter
///   track whose first chapter plays from 0, and a track the edit lists
///   and track patches do not expect.)
/// - Matroska and WebM: libavformat's chapters, handed to the muxer
///   before its trailer, which writes them there on a seekable file.
/// - MPEG-TS, WAV, FLAC, Ogg, and MP4 or QuickTime kept in fragments
///   (`keepsMovieFragments`): none; the file has no place for them once its
///   header is written.
extension AssetWriter {
    /// Whether a finished file of this writer carries chapters (see above).
    public var writesChapters: Bool {
        lock.withLock { AssetWriter.writesChapters(fileType: fileType, fragmentInterval: settings.fragmentInterval, keepsFragments: settings.keepsFragments) }
    }

    static func writesChapters(fileType: FileType, fragmentInterval: MediaTime, keepsFragments: Bool) -> Bool {
        switch fileType {
        case .mp4, .quickTimeMovie, .m4a: return !(writesFragments(every: fragmentInterval, in: fileType) && keepsFragments)
        case .matroska, .webm: return true
        case .mpegTS, .wav, .flac, .ogg, .opus: return false
        }
    }

    /// Marks a chapter titled `title` starting at `time` on the file's
    /// timeline (0 where the first session starts; the time between
    /// sessions left out). Each chapter runs to the next one's start, the
    /// last to the end of the file; none is made up before the first. In
    /// MP4 and QuickTime a title keeps its first 255 bytes and a file its
    /// first 255 chapters (the limits of the 'chpl' box). May be called
    /// from any thread until `finishWriting()` begins; a file type without
    /// chapters (`writesChapters`) takes the call and writes nothing. A
    /// file written in fragments that becomes a regular movie also keeps
    /// its chapters in the file as they come (see `ChapterLog`), for
    /// `MovieRepair`; when that copy cannot be written the call throws, and
    /// the chapter is still written at the finish.
    public func addChapter(title: String, at time: MediaTime) throws(WriterError) {
        guard time.isNumeric, time >= .zero else { throw .invalidSettings("a chapter must start at a time of 0 or later, not \(time)") }
        try lock.withLock { () throws(WriterError) in
            guard state == .unknown || state == .writing, !finishing else {
                throw .invalidState("chapters can only be added before the file is finished (status: \(state.rawValue))")
            }
            chapterPoints.append((time, title))
            try updateChapterLog()
        }
    }

    /// Puts the chapter log's box after the session log, before the first
    /// fragment: through the muxer's I/O, which then goes on after it. Lock held.
    func writeChapterLog() throws(WriterError) {
        guard let io else { return }
        let offset = avio_tell(io.context)
        let bytes = ChapterLog(points: chapterPoints.map { ChapterLog.Point(time: $0.time, title: $0.title) }).box()
        bytes.withUnsafeBufferPointer { avio_write(io.context, $0.baseAddress, Int32($0.count)) }
        avio_flush(io.context)
        if let error = io.ioError { throw .io(path: outputPath, error: error) }
        headerBytes = avio_tell(io.context)
        chapterLogOffset = offset
    }

    /// Rewrites the chapter log in place with every chapter so far (before
    /// the header, the header writes it). A failure leaves the chapter to
    /// the finish, which writes it all the same. Lock held.
    func updateChapterLog() throws(WriterError) {
        guard let offset = chapterLogOffset else { return }
        let log = ChapterLog(points: chapterPoints.map { ChapterLog.Point(time: $0.time, title: $0.title) })
        do throws(SystemCallError) {
            try file.write(log.payload(), at: offset + 8)
        } catch {
            throw .io(path: outputPath, error: error)
        }
    }

    /// The chapters of a movie of `duration` movie time-scale units. Lock held.
    func movieChapters(duration: UInt64?, timescale: UInt32) -> [MediaChapter] {
        guard !chapterPoints.isEmpty, let duration, timescale > 0, timescale <= UInt32(Int32.max) else { return [] }
        return Chapters.chapters(from: chapterPoints, duration: MediaTime(value: Int64(clamping: duration), timescale: Int32(timescale)))
    }

    /// Hands the chapters to a Matroska or WebM muxer before its trailer,
    /// timed in nanoseconds (Matroska's own unit). Lock held.
    func addMuxerChapters(to format: UnsafeMutablePointer<AVFormatContext>) throws(WriterError) {
        guard fileType == .matroska || fileType == .webm, !chapterPoints.isEmpty else { return }
        let nanoseconds: Int32 = 1_000_000_000
        let shift = negativeStart(format).converted(toTimescale: nanoseconds).value
        for (index, chapter) in Chapters.chapters(from: chapterPoints, duration: writtenDuration(format)).enumerated() {
            let start = chapter.start.converted(toTimescale: nanoseconds).value + shift
            let end = max(start, chapter.end.converted(toTimescale: nanoseconds).value + shift)
            let added = cffmpeg_add_chapter(format, Int64(index + 1), AVRational(num: 1, den: nanoseconds), start, end, chapter.title)
            if added < 0 { throw .ffmpeg(FFmpegError(call: "cffmpeg_add_chapter", code: added)) }
        }
    }

    /// How far before 0 the first sample handed to the muxer is presented
    /// (an Opus encoder's priming in WebM): the Matroska muxer moves every
    /// packet later by as much so that none is stamped before 0 (its
    /// `avoid_negative_ts`, which it applies to presentation times), and
    /// the chapters move with them. Lock held.
    func negativeStart(_ format: UnsafeMutablePointer<AVFormatContext>) -> MediaTime {
        var earliest = MediaTime.zero
        for (index, span) in spans.enumerated() where index < Int(format.pointee.nb_streams) {
            guard let first = span.runs.first?.start, let stream = format.pointee.streams[index] else { continue }
            let base = stream.pointee.time_base
            guard base.num > 0, base.den > 0 else { continue }
            let time = MediaTime(value: first * Int64(base.num), timescale: base.den) - timelineOffset
            if time.isNumeric, time < earliest { earliest = time }
        }
        return .zero - earliest
    }

    /// How far the samples handed to the muxer reach on the file's
    /// timeline: the latest end of any track. Lock held.
    func writtenDuration(_ format: UnsafeMutablePointer<AVFormatContext>) -> MediaTime {
        var latest = MediaTime.zero
        for (index, span) in spans.enumerated() where index < Int(format.pointee.nb_streams) {
            guard let end = span.runs.last?.end, let stream = format.pointee.streams[index] else { continue }
            let base = stream.pointee.time_base
            guard base.num > 0, base.den > 0 else { continue }
            let reach = MediaTime(value: end * Int64(base.num), timescale: base.den) - timelineOffset
            if reach.isNumeric, reach > latest { latest = reach }
        }
        return latest
    }
}
