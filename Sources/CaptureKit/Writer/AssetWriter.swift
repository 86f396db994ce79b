import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Writes media to a new file of a given container type, one track per
/// input, the way AVAssetWriter does: add inputs, `startWriting()`, open a
/// session with `startSession(atSourceTime:)`, append samples to the inputs,
/// then `finishWriting()` (or `cancelWriting()`, which removes the file).
///
/// The file is created when the writer is: creation fails if anything exists
/// at the path, and a symbolic link there is never followed. A writer writes
/// one file once.
///
/// Where it differs from AVAssetWriter on purpose:
/// - The file is made by `init`, which throws `outputExists` when anything
///   is at the path; AVAssetWriter's init succeeds there and its writing
///   fails later. A writer that never starts removes its file again, as
///   does a `startWriting()` that fails.
/// - Calls that AVAssetWriter answers with false or nil and an `NSError`,
///   or refuses with an exception (`init`, `add`, `startWriting()`,
///   `finishWriting()`, an input's appends), throw a `WriterError`
///   instead, which says why. A failure of the file also sets `status` to
///   `.failed` and `error`, as there; a sample or setting refused on its
///   own (an input given what it cannot encode, times that do not
///   increase) throws and leaves the writer writing.
///
/// Sessions lay samples onto the file's timeline end to end: a session from
/// source time S to E fills file time M … M + (E − S), where M is the total
/// length of the sessions before it. Samples are stamped with that file
/// time as they are written, fragments included, so a pause leaves no gap in
/// the media and no timestamp runs backwards; samples outside every session
/// are left out. Edit lists (MP4, QuickTime, M4A) say only where each
/// track's media starts: encoder priming, the reordering delay of video,
/// a track that begins later than the others.
public final class AssetWriter: @unchecked Sendable {
    // @unchecked: every mutable stored property, the FFmpeg muxer context and held packets among them,
    // is read and written under `lock`, here and in the AssetWriter+*.swift extensions that share them.
    /// Where a writer is in its life.
    public enum Status: String, Sendable {
        /// Being configured: inputs and properties may still change.
        case unknown
        case writing
        case completed
        case failed
        case cancelled
    }

    public let outputPath: String
    public let fileType: FileType

    /// Movie fragments: when numeric and positive, MP4/QuickTime/M4A files
    /// are written as a sequence of fragments about this long (video
    /// fragments start at keyframes; encoded video gets a keyframe at least
    /// this often), so a file cut off at any byte plays up to its last
    /// complete fragment. `finishWriting()` then makes it a regular movie
    /// (unless `keepsMovieFragments`): one index with complete sample
    /// tables after the media, the fragments left where they are inside one
    /// media data box. Invalid (the default) writes one index at the end.
    /// Has no effect once writing has started.
    public var movieFragmentInterval: MediaTime {
        get { lock.withLock { settings.fragmentInterval } }
        set { lock.withLock { if state == .unknown { settings.fragmentInterval = newValue } } }
    }

    /// Whether a file written in fragments stays fragmented when finished
    /// (for players that take fragments, such as Media Source Extensions).
    /// False (the default): `finishWriting()` turns the fragments into a
    /// regular movie, which every reader reads at once, without walking the
    /// fragments; a file whose writing never finished stays fragmented, and
    /// `MovieRepair` makes it regular. Has no effect once writing has started.
    public var keepsMovieFragments: Bool {
        get { lock.withLock { settings.keepsFragments } }
        set { lock.withLock { if state == .unknown { settings.keepsFragments = newValue } } }
    }

    /// Put the index in front of the media data (MP4, QuickTime, M4A), so
    /// playback over a network can start before the whole file has arrived.
    /// Fragmented files have it there anyway. Has no effect once writing has started.
    public var shouldOptimizeForNetworkUse: Bool {
        get { lock.withLock { settings.faststart } }
        set { lock.withLock { if state == .unknown { settings.faststart = newValue } } }
    }

    /// The movie's time scale (units per second) for MP4, QuickTime and M4A;
    /// 0 (the default) uses the first video track's media time scale, or the
    /// first track's. Has no effect once writing has started.
    public var movieTimeScale: Int32 {
        get { lock.withLock { settings.movieTimeScale } }
        set { lock.withLock { if state == .unknown { settings.movieTimeScale = newValue } } }
    }

    /// Metadata written into the file. Has no effect once writing has started.
    public var metadata: [MetadataItem] {
        get { lock.withLock { settings.metadata } }
        set { lock.withLock { if state == .unknown { settings.metadata = newValue } } }
    }

    public var status: Status { lock.withLock { state } }

    /// What made the writer fail, when `status` is `.failed`.
    public var error: WriterError? { lock.withLock { failure } }

    public var inputs: [AssetWriterInput] { lock.withLock { inputList } }
    public var inputGroups: [AssetWriterInputGroup] { lock.withLock { groupList } }

    /// The media types inputs can be added for.
    public var availableMediaTypes: [MediaType] { fileType.availableMediaTypes }

    // MARK: State (guarded by `lock`)

    struct Settings {
        var fragmentInterval = MediaTime.invalid
        var faststart = false
        var keepsFragments = false
        var movieTimeScale: Int32 = 0
        var metadata: [MetadataItem] = []
    }

    let lock = Lock()
    var settings = Settings()
    var state = Status.unknown
    var failure: WriterError?
    var inputList: [AssetWriterInput] = []
    var groupList: [AssetWriterInputGroup] = []
    var finishing = false
    private(set) var timeline = SessionTimeline()
    let file: OutputFile
    var io: FileWriteContext?
    var format: UnsafeMutablePointer<AVFormatContext>?
    var spans: [TrackSpanTicks] = []
    /// Per stream, the video packet held back until the next (see `write`).
    var heldPackets: [UnsafeMutablePointer<AVPacket>?] = []
    /// Per stream, the decode time of the latest packet, in the stream's time base.
    var lastDecodeTicks: [Int64?] = []
    /// Bytes of the header and of the packets handed to the muxer, which
    /// may hold a fragment's worth in memory before it reaches the file.
    var headerBytes: Int64 = 0
    var payloadBytes: Int64 = 0
    var packetCount: Int64 = 0
    /// Whether finishing writes the movie's edit lists, time scale and track
    /// flags (MP4, QuickTime, M4A written in one piece or made regular).
    private(set) var usesEditLists = false
    /// Fragments that become a regular movie when finished.
    var becomesRegularMovie = false
    /// Per input, how long the audio encoder's priming lasts before its
    /// first sample (zero for video, and where the priming is not written).
    var primingDelays: [MediaTime] = []
    /// Added to file times in fragmented files (see `openMuxer`).
    var timelineOffset = MediaTime.zero
    /// The sessions and first decode times of a file written in fragments
    /// that becomes a regular movie, and where its box is in the file (see `SessionLog`).
    var sessionLog: SessionLog?
    var sessionLogOffset: Int64?
    /// The header, while it waits for in-band codec configuration (see `DeferredHeader`).
    var deferredHeader: DeferredHeader?
    /// Chapters asked for so far, by where they start on the file's timeline
    /// (see `AssetWriter+Chapters.swift`), and where the box that keeps them
    /// for a repair is in the file (see `ChapterLog`).
    var chapterPoints: [(time: MediaTime, title: String)] = []
    var chapterLogOffset: Int64?
    var isFragmented: Bool { Self.writesFragments(every: settings.fragmentInterval, in: fileType) }

    /// Whether a file of `fileType` with this fragment interval is written in fragments.
    static func writesFragments(every interval: MediaTime, in fileType: FileType) -> Bool {
        interval.isNumeric && interval > .zero && fileType.supportsFragments
    }

    /// Creates the output file (failing if anything exists at `outputPath`)
    /// for the given container type, or the one the file name's extension
    /// implies.
    public init(outputPath: String, fileType: FileType? = nil) throws(WriterError) {
        guard let type = fileType ?? FileType(path: outputPath) else {
            throw .invalidSettings("cannot tell the container from '\(outputPath)'; use .mp4, .mov, .mkv, .webm, .ts, .wav, .flac, .m4a, .ogg or .opus")
        }
        FFmpegLogging.configure()
        guard av_guess_format(type.muxerName, nil, nil) != nil else { throw .unsupportedFileType(type) }
        self.outputPath = outputPath
        self.fileType = type
        self.file = try OutputFile(creating: outputPath)
    }

    deinit {
        freeFormat()
        // A writer that never started leaves nothing behind.
        if state == .unknown { file.remove() }
    }

    func freeFormat() {
        for index in heldPackets.indices { av_packet_free(&heldPackets[index]) }
        deferredHeader = nil
        if let format {
            // The I/O context is ours (custom I/O); libavformat must not close it.
            format.pointee.pb = nil
            avformat_free_context(format)
        }
        format = nil
        io = nil
    }

    // MARK: Writing

    /// Opens the encoders and writes the file's header. After this, start a
    /// session and append samples. On failure the status is `.failed`, the
    /// error is thrown, and the file is removed.
    public func startWriting() throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard state == .unknown else { throw .invalidState("startWriting() was already called (status: \(state.rawValue))") }
            do throws(WriterError) {
                try openMuxer()
                state = .writing
            } catch {
                freeFormat()
                for input in inputList { input.releaseEncoders() }
                state = .failed
                failure = error
                file.remove()
                throw error
            }
        }
    }

    func openMuxer() throws(WriterError) {
        guard !inputList.isEmpty else { throw .invalidState("add at least one input before starting to write") }
        var context: UnsafeMutablePointer<AVFormatContext>?
        let allocated = avformat_alloc_output_context2(&context, nil, fileType.muxerName, nil)
        guard allocated >= 0, let context else { throw .ffmpeg(FFmpegError(call: "avformat_alloc_output_context2(\(fileType.muxerName))", code: allocated)) }
        format = context
        let writeContext: FileWriteContext
        // Unfragmented files get each packet written on its own; a buffer
        // gathers them. A fragment's media data comes in one block.
        do { writeContext = try FileWriteContext(file: file, writingBlocksThrough: isFragmented) } catch { throw .ffmpeg(error) }
        io = writeContext
        context.pointee.pb = writeContext.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context.pointee.url = av_strdup(outputPath)
        let globalHeader = context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0
        let fragmented = isFragmented
        becomesRegularMovie = fragmented && !settings.keepsFragments
        usesEditLists = fileType.isMovieFamily && (!fragmented || becomesRegularMovie)

        for (index, input) in inputList.enumerated() {
            guard let stream = avformat_new_stream(context, nil) else {
                throw .ffmpeg(FFmpegError(call: "avformat_new_stream", code: cffmpeg_averror(ENOMEM)))
            }
            let keyframeInterval = fragmented ? settings.fragmentInterval : nil
            try input.prepare(stream: stream, index: index, isOnlyTrack: inputList.count == 1, globalHeader: globalHeader,
                              fragmentInterval: keyframeInterval)
        }
        heldPackets = Array(repeating: nil, count: inputList.count)
        lastDecodeTicks = Array(repeating: nil, count: inputList.count)
        spans = inputList.map { input in
            var span = TrackSpanTicks()
            span.bridgesEveryGap = input.mediaType == .video
            return span
        }
        // Audio encoders' priming, which the edit lists skip (video's
        // reordering delay needs nothing: its runs are presentation times).
        primingDelays = inputList.map { $0.mediaType == .audio ? $0.startupDelay : .zero }
        if fragmented {
            // A fragment cannot start before time 0, and libavformat would
            // otherwise shift each track on its own: start the timeline late
            // enough for encoder priming and reordering delay.
            timelineOffset = inputList.map(\.startupDelay).max() ?? .zero
        }

        for item in settings.metadata {
            if item.key == "creation_time" {
                var parsed: Int64 = 0
                guard av_parse_time(&parsed, item.value, 0) >= 0 else {
                    throw .invalidSettings("creation time '\(item.value)' is not an ISO 8601 date such as 2024-05-01T12:00:00Z")
                }
            }
            av_dict_set(&context.pointee.metadata, item.key, item.value, 0)
        }

        var options: OpaquePointer?
        if fileType.isMovieFamily {
            var flags = [String]()
            if settings.metadata.contains(where: { !MetadataItem.commonKeys.contains($0.key) }) { flags.append("use_metadata_tags") }
            if fragmented {
                flags += ["frag_keyframe", "empty_moov", "default_base_moof"]
                if becomesRegularMovie {
                    // Its index takes the place of the fragment index ('mfra').
                    flags.append("skip_trailer")
                    // Every track's samples keep the times given, counted
                    // from its first sample (the muxer would otherwise shift
                    // the tracks and move each one's first sample to 0), so
                    // that the edit lists the sessions give fit the media.
                    av_dict_set(&options, "use_editlist", "0", 0)
                    context.pointee.avoid_negative_ts = AVFMT_AVOID_NEG_TS_DISABLED
                }
                let micros = settings.fragmentInterval.converted(toTimescale: 1_000_000).value
                let clamped = String(max(1, min(micros, Int64(Int32.max))))
                if inputList.contains(where: { $0.mediaType == .video }) {
                    av_dict_set(&options, "min_frag_duration", clamped, 0)
                } else {
                    av_dict_set(&options, "frag_duration", clamped, 0)
                }
                // Every packet reaches the file as soon as the muxer lets it
                // go, so a completed fragment is on disk when the next begins.
                context.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
            }
            if !flags.isEmpty { av_dict_set(&options, "movflags", "+" + flags.joined(separator: "+"), 0) }
        }
        // H.264/HEVC copied from a camera brings its parameter sets in band:
        // the header that needs them waits for the first keyframe.
        // So does the header of a track whose encoder waits for the frame
        // rate its first frames give.
        let awaited = Set(inputList.indices.filter {
            inputList[$0].needsConfigurationFromFirstFrame || inputList[$0].needsFrameRateFromFirstFrames
        })
        let header = DeferredHeader(awaitedStreams: awaited, options: options)
        if awaited.isEmpty {
            try writeHeader(header)
        } else {
            deferredHeader = header
        }
    }

    /// avformat_write_header with the muxer options `header` kept; then the
    /// packets that waited for it.
    func writeHeader(_ header: DeferredHeader) throws(WriterError) {
        guard let format, let io else { throw .invalidState("the writer is not writing") }
        let written = avformat_write_header(format, &header.options)
        if written < 0 { throw ioFailure(FFmpegError(call: "avformat_write_header(\(fileType.muxerName))", code: written)) }
        headerBytes = avio_tell(io.context)
        if let unused = av_dict_get(header.options, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw .invalidSettings("the \(fileType.muxerName) muxer has no option '\(String(cString: unused.pointee.key))'")
        }
        if isFragmented { try patchFragmentedMovieHeader() }
        if becomesRegularMovie {
            try writeSessionLog()
            try writeChapterLog()
        }
        try header.release { packet, timeBase throws(WriterError) in try place(packet, timeBase: timeBase, into: format) }
    }

    /// Supplies the codec configuration (Annex B parameter sets) of a track
    /// whose header waits for it; writes the header once no track waits.
    func supplyConfiguration(_ configuration: [UInt8], streamIndex: Int) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard state == .writing, let format, let header = deferredHeader else { return }
            do throws(WriterError) {
                guard try header.supply(configuration, for: format.pointee.streams[streamIndex]!, index: streamIndex) else { return }
                deferredHeader = nil
                try writeHeader(header)
            } catch {
                throw failLocked(error)
            }
        }
    }

    /// Gives a track the codec parameters of its encoder, opened once its
    /// frames gave the rate; writes the header once no track waits.
    func supplyEncoderParameters(from context: UnsafeMutablePointer<AVCodecContext>, streamIndex: Int) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard state == .writing, let format, let header = deferredHeader else { return }
            do throws(WriterError) {
                let stream = format.pointee.streams[streamIndex]!
                let copied = avcodec_parameters_from_context(stream.pointee.codecpar, context)
                if copied < 0 { throw WriterError.ffmpeg(FFmpegError(call: "avcodec_parameters_from_context", code: copied)) }
                stream.pointee.avg_frame_rate = context.pointee.framerate
                guard header.markSupplied(index: streamIndex) else { return }
                deferredHeader = nil
                try writeHeader(header)
            } catch {
                throw failLocked(error)
            }
        }
    }

    /// Whether the track's header still waits for its codec configuration.
    func awaitsConfiguration(streamIndex: Int) -> Bool {
        lock.withLock { deferredHeader?.awaitedStreams.contains(streamIndex) ?? false }
    }

    /// The error for a failed muxer call: the write error underneath, if one caused it.
    func ioFailure(_ error: FFmpegError) -> WriterError {
        if let ioError = io?.ioError { return .io(path: outputPath, error: ioError) }
        return .ffmpeg(error)
    }

    /// Starts a sample-writing session at `time` on the samples' clock. The
    /// first session starts at file time 0; each later one continues where
    /// the one before ended.
    public func startSession(atSourceTime time: MediaTime) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard state == .writing, !finishing else { throw .invalidState("a session can only start while writing (status: \(state.rawValue))") }
            try timeline.start(at: time)
            try logSessions()
        }
    }

    /// Ends the running session at `time` on the samples' clock: samples
    /// after it do not play. Without this call, a session ends with the
    /// latest sample appended in it.
    public func endSession(atSourceTime time: MediaTime) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard state == .writing, !finishing else { throw .invalidState("a session can only end while writing (status: \(state.rawValue))") }
            try timeline.end(at: time)
            try logSessions()
        }
    }

    /// Marks every input finished, writes what the encoders still hold,
    /// ends the running session, and finalizes the file (its index, edit
    /// lists, and, for network use, the index moved to the front). When it
    /// returns, the file is complete and on disk.
    public func finishWriting() throws(WriterError) {
        if status == .writing {
            for input in inputs {
                do throws(WriterError) { try input.flushDecoder() } catch { throw fail(error) }
            }
        }
        let alreadyDone = try lock.withLock { () throws(WriterError) -> Bool in
            switch state {
            case .writing where !finishing: finishing = true; return false
            case .completed: return true
            case .failed: throw failure ?? .invalidState("the writer has failed")
            default: throw .invalidState("finishWriting() needs a writer that is writing (status: \(state.rawValue))")
            }
        }
        if alreadyDone { return }
        // Where the last session was ended, on the file's timeline: audio
        // whose end was lost before it reaches there in silence.
        let sessionsEnd = lock.withLock { fileSessions().last?.end }
        for input in inputs {
            do throws(WriterError) {
                if let sessionsEnd { try input.fillAudio(toFileTime: sessionsEnd) }
                try input.finishEncoding()
            } catch { throw fail(error) }
        }
        try lock.withLock { () throws(WriterError) in
            guard state == .writing, let format else { throw failure ?? .invalidState("the writer has failed") }
            if let header = deferredHeader {
                // No keyframe with its parameter sets ever came: nothing in
                // the file could be decoded, so there is no file.
                let codecs = header.awaitedStreams.sorted().map { inputList[$0].outputSettings.codecName }
                freeFormat()
                file.remove()
                state = .failed
                failure = .noDecodableStart(codecs: codecs)
                throw failure!
            }
            do throws(WriterError) {
                try writeHeldPackets(into: format)
                try addMuxerChapters(to: format)
                let trailer = av_write_trailer(format)
                if trailer < 0 { throw ioFailure(FFmpegError(call: "av_write_trailer(\(fileType.muxerName))", code: trailer)) }
                if let error = io?.ioError { throw WriterError.io(path: outputPath, error: error) }
                freeFormat()
                if becomesRegularMovie {
                    try finalizeFragmentsAsRegularMovie()
                } else if usesEditLists {
                    try finalizeMovie()
                }
                do throws(SystemCallError) { try file.syncAndClose() } catch { throw WriterError.io(path: outputPath, error: error) }
                state = .completed
                for input in inputList { input.releaseEncoders() }
            } catch {
                freeFormat()
                file.closeQuietly()
                state = .failed
                failure = error
                throw error
            }
        }
    }

    /// Stops writing and removes the file. Samples not yet written are
    /// dropped. Does nothing to a writer that has completed.
    public func cancelWriting() {
        lock.withLock {
            guard state == .unknown || state == .writing || state == .failed else { return }
            freeFormat()
            file.remove()
            state = .cancelled
            failure = nil
        }
        for input in inputs { input.releaseEncoders() }
    }

    /// Puts the writer into the failed state with `error` (the first error
    /// wins) and returns the error to throw.
    @discardableResult
    func fail(_ error: WriterError) -> WriterError {
        lock.withLock {
            if state == .writing {
                state = .failed
                failure = error
            }
            return failure ?? error
        }
    }

}
