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
/// Sessions lay samples onto the file's timeline end to end: a session from
/// source time S to E fills file time M … M + (E − S), where M is the total
/// length of the sessions before it. In MP4, QuickTime and M4A files every
/// sample is stored and edit lists choose what plays (samples outside the
/// sessions are edited out, a session with no samples becomes an empty
/// edit). MP4, QuickTime and M4A files written in fragments leave samples
/// outside the sessions out and keep the rest at their own times, so that a
/// pause leaves a gap, which the edit lists of the regular movie they become
/// when finished skip; fragmented files kept as fragments
/// (`keepsMovieFragments`) and the other containers re-stamp the samples
/// with file time instead.
public final class AssetWriter: @unchecked Sendable {
    // @unchecked: every mutable stored property is guarded by `lock`.
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

    private struct Settings {
        var fragmentInterval = MediaTime.invalid
        var faststart = false
        var keepsFragments = false
        var movieTimeScale: Int32 = 0
        var metadata: [MetadataItem] = []
    }

    private let lock = WriterLock()
    private var settings = Settings()
    private var state = Status.unknown
    private var failure: WriterError?
    private var inputList: [AssetWriterInput] = []
    private var groupList: [AssetWriterInputGroup] = []
    private var finishing = false
    private(set) var timeline = SessionTimeline()
    private let file: OutputFile
    private var io: FileWriteContext?
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var spans: [TrackSpanTicks] = []
    /// Per stream, the video packet held back until the next (see `write`).
    private var heldPackets: [UnsafeMutablePointer<AVPacket>?] = []
    /// Bytes of the header and of the packets handed to the muxer, which
    /// may hold a fragment's worth in memory before it reaches the file.
    private var headerBytes: Int64 = 0
    private var payloadBytes: Int64 = 0
    private var packetCount: Int64 = 0
    /// Whether sessions become edit lists (true) or re-stamped timestamps.
    private(set) var usesEditLists = false
    /// Fragments that become a regular movie when finished: samples outside
    /// the sessions are left out, the rest keep their times (see `placement`).
    private var becomesRegularMovie = false
    /// Added to file times in fragmented files (see `openMuxer`).
    private var timelineOffset = MediaTime.zero
    /// The sessions and first decode times of a file written in fragments
    /// that becomes a regular movie, and where its box is in the file (see `SessionLog`).
    private var sessionLog: SessionLog?
    private var sessionLogOffset: Int64?
    /// The header, while it waits for in-band codec configuration (see `DeferredHeader`).
    private var deferredHeader: DeferredHeader?
    private var isFragmented: Bool { settings.fragmentInterval.isNumeric && settings.fragmentInterval > .zero && fileType.supportsFragments }

    /// What has been written to one stream, in its time base.
    struct TrackSpanTicks {
        var firstDecode: Int64?
        /// Covered stretches [start, end), sorted, merged when they touch.
        var runs: [(start: Int64, end: Int64)] = []
        var packets = 0
        /// Packets with data: the samples the muxer writes.
        var samples = 0
        /// What the track's sample tables will hold, for the size estimate:
        /// runs of equal decode steps and of equal composition offsets, and keyframes.
        var timeRuns = 0
        var offsetRuns = 0
        var keyframes = 0
        var lastDecode: Int64?
        var lastStep: Int64?
        var lastOffset: Int64?
        /// Gaps up to this long (the longest packet duration seen) are
        /// rounding or a dropped sample, not a pause: runs bridge them.
        var tolerance: Int64 = 0
        /// Video: a frame shows until the next one (see `SessionTimeline.TrackSpan`).
        var bridgesEveryGap = false

        /// Counts a sample into the estimate of the sample tables.
        mutating func tally(decode: Int64, presentation: Int64, keyframe: Bool) {
            samples += 1
            if keyframe { keyframes += 1 }
            if let lastDecode {
                let step = decode - lastDecode
                if step != lastStep { timeRuns += 1 }
                lastStep = step
            }
            let offset = presentation - decode
            if offset != lastOffset { offsetRuns += 1 }
            lastOffset = offset
            lastDecode = decode
            timeRuns = max(timeRuns, 1)
        }

        /// Records a sample's span; one without a duration still marks where
        /// a run starts, to be joined to the next sample.
        mutating func cover(_ start: Int64, _ end: Int64) {
            guard end >= start else { return }
            tolerance = max(tolerance, end - start)
            // Packets come nearly in order: search from the back.
            var index = runs.count
            while index > 0 && runs[index - 1].start > start { index -= 1 }
            runs.insert((start, end), at: index)
            var merged = max(index - 1, 0)
            while merged + 1 < runs.count {
                if runs[merged + 1].start <= runs[merged].end + tolerance {
                    runs[merged].end = max(runs[merged].end, runs[merged + 1].end)
                    runs.remove(at: merged + 1)
                } else if merged >= index {
                    break
                } else {
                    merged += 1
                }
            }
        }
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

    private func freeFormat() {
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

    // MARK: Configuration

    /// Whether the container can carry a track with these settings. Answered
    /// by libavformat's own codec query for the container, or, where it has
    /// none (MPEG-TS, Ogg, FLAC), by the codecs its muxer is known to take.
    public func canApply(outputSettings: OutputSettings, forMediaType mediaType: MediaType) -> Bool {
        AssetWriter.canApply(outputSettings: outputSettings, forMediaType: mediaType, fileType: fileType)
    }

    /// Whether a container of `fileType` can carry a track with these
    /// settings, asked before any file exists (as a command checks its
    /// options before creating its output).
    public static func canApply(outputSettings: OutputSettings, forMediaType mediaType: MediaType, fileType: FileType) -> Bool {
        guard outputSettings.mediaType == mediaType, fileType.availableMediaTypes.contains(mediaType) else { return false }
        return container(fileType, canCarry: outputSettings.codecID)
    }

    /// How many bytes of the file exist so far: those on disk plus those the
    /// muxer still buffers. What a size limit is measured against.
    public var bytesWritten: Int64 {
        lock.withLock {
            guard let io else { return (try? file.size()) ?? 0 }
            // No system call: asked for every sample during a recording.
            return max(io.extent, avio_tell(io.context))
        }
    }

    /// What the file will hold once the muxer writes what it buffers and
    /// finalizes it: the header, the packets appended, and their index
    /// entries (about 24 bytes a sample in fragments or the movie box),
    /// plus room for the trailer. A size limit stops before this reaches it.
    public var estimatedFinalSize: Int64 {
        let written = bytesWritten
        return lock.withLock {
            let classic = max(written, headerBytes + payloadBytes + packetCount * 24) + 4096
            guard becomesRegularMovie else { return classic }
            // The regular movie's index comes on top of the fragments.
            return max(classic, written + regularIndexEstimate())
        }
    }

    /// At least the size of the movie box a file written in fragments gets
    /// when finished: the fragmented one (part of the header) with sample
    /// tables counted from the packets written. Lock held.
    private func regularIndexEstimate() -> Int64 {
        var bytes = headerBytes + 4096
        let interval = max(settings.fragmentInterval.seconds, 0.001)
        for (index, span) in spans.enumerated() {
            bytes += Int64(span.timeRuns + span.offsetRuns) * 8 + Int64(span.samples) * 4 + 256
            if span.keyframes < span.samples { bytes += Int64(span.keyframes) * 4 }
            // One chunk (in 'stsc' and 'stco'/'co64') per fragment and track;
            // fragments last at least the interval.
            let scale = index < inputList.count ? Double(format?.pointee.streams[index]?.pointee.time_base.den ?? 90000) : 90000
            let length = Double((span.runs.last?.end ?? 0) - (span.firstDecode ?? 0)) / max(scale, 1)
            bytes += Int64((length / interval + 2) * 2) * 20
        }
        return bytes
    }

    static func container(_ fileType: FileType, canCarry codec: AVCodecID) -> Bool {
        guard codec != AV_CODEC_ID_NONE, let muxer = av_guess_format(fileType.muxerName, nil, nil) else { return false }
        let answer = avformat_query_codec(muxer, codec, FF_COMPLIANCE_NORMAL)
        if answer >= 0 { return answer == 1 }
        // No answer from libavformat: what these muxers accept.
        let known: [AVCodecID]
        switch fileType {
        case .mpegTS: known = [AV_CODEC_ID_H264, AV_CODEC_ID_HEVC, AV_CODEC_ID_AAC, AV_CODEC_ID_OPUS, AV_CODEC_ID_MP2, AV_CODEC_ID_MP3, AV_CODEC_ID_AC3, AV_CODEC_ID_MPEG2VIDEO]
        case .ogg: known = [AV_CODEC_ID_OPUS, AV_CODEC_ID_FLAC, AV_CODEC_ID_VORBIS, AV_CODEC_ID_SPEEX]
        case .opus: known = [AV_CODEC_ID_OPUS]
        case .flac: known = [AV_CODEC_ID_FLAC]
        default: known = []
        }
        return known.contains(codec)
    }

    /// Why `canAdd(_:)` says no, or nil when the input can be added.
    public func reasonInputCannotBeAdded(_ input: AssetWriterInput) -> String? {
        lock.withLock { addRefusal(input) }
    }

    private func addRefusal(_ input: AssetWriterInput) -> String? {
        if state != .unknown { return "inputs cannot be added once writing has started" }
        if inputList.contains(where: { $0 === input }) { return "the input is already added" }
        if input.writer != nil { return "the input belongs to another writer" }
        if !fileType.availableMediaTypes.contains(input.mediaType) {
            return "\(fileType.displayName) files cannot hold \(input.mediaType.rawValue)"
        }
        if !canApply(outputSettings: input.outputSettings, forMediaType: input.mediaType) {
            return "\(fileType.displayName) files cannot carry \(input.outputSettings.codecName)"
        }
        return nil
    }

    /// Whether `input` can be added: the writer has not started, and the
    /// container can carry its media type and codec.
    public func canAdd(_ input: AssetWriterInput) -> Bool { reasonInputCannotBeAdded(input) == nil }

    /// Adds an input (one track). Throws when `canAdd(_:)` would say no.
    public func add(_ input: AssetWriterInput) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            if let reason = addRefusal(input) {
                if state == .unknown, !canApply(outputSettings: input.outputSettings, forMediaType: input.mediaType) {
                    throw .codecNotAllowed(codec: input.outputSettings.codecName, fileType: fileType)
                }
                throw .invalidState(reason)
            }
            input.writer = self
            inputList.append(input)
        }
    }

    /// Whether a group of alternate inputs can be added: the container has
    /// alternate tracks, the inputs are this writer's, share a media type,
    /// and are in no other group.
    public func canAdd(_ group: AssetWriterInputGroup) -> Bool { lock.withLock { groupRefusal(group) == nil } }

    private func groupRefusal(_ group: AssetWriterInputGroup) -> String? {
        if state != .unknown { return "input groups cannot be added once writing has started" }
        if !fileType.supportsAlternateGroups { return "\(fileType.displayName) files have no alternate tracks" }
        if group.inputs.isEmpty { return "the group has no inputs" }
        if !group.inputs.allSatisfy({ input in inputList.contains { $0 === input } }) { return "add the group's inputs to the writer first" }
        if Set(group.inputs.map(\.mediaType)).count != 1 { return "a group's inputs must all have the same media type" }
        if let defaultInput = group.defaultInput, !group.inputs.contains(where: { $0 === defaultInput }) {
            return "the default input is not in the group"
        }
        for existing in groupList {
            if existing.inputs.contains(where: { old in group.inputs.contains { $0 === old } }) { return "an input is already in another group" }
        }
        return nil
    }

    /// Adds a group of alternate inputs: their tracks are marked as
    /// alternates of each other, the default input's track enabled and the
    /// others disabled.
    public func add(_ group: AssetWriterInputGroup) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            if let reason = groupRefusal(group) { throw .invalidState(reason) }
            groupList.append(group)
            for input in group.inputs { input.marksOutputTrackAsEnabled = input === group.defaultInput }
        }
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

    private func openMuxer() throws(WriterError) {
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
        spans = inputList.map { input in
            var span = TrackSpanTicks()
            span.bridgesEveryGap = input.mediaType == .video
            return span
        }
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
        let awaited = Set(inputList.indices.filter { inputList[$0].needsConfigurationFromFirstFrame })
        let header = DeferredHeader(awaitedStreams: awaited, options: options)
        if awaited.isEmpty {
            try writeHeader(header)
        } else {
            deferredHeader = header
        }
    }

    /// avformat_write_header with the muxer options `header` kept; then the
    /// packets that waited for it.
    private func writeHeader(_ header: DeferredHeader) throws(WriterError) {
        guard let format, let io else { throw .invalidState("the writer is not writing") }
        let written = avformat_write_header(format, &header.options)
        if written < 0 { throw ioFailure(FFmpegError(call: "avformat_write_header(\(fileType.muxerName))", code: written)) }
        headerBytes = avio_tell(io.context)
        if let unused = av_dict_get(header.options, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw .invalidSettings("the \(fileType.muxerName) muxer has no option '\(String(cString: unused.pointee.key))'")
        }
        if isFragmented { try patchFragmentedMovieHeader() }
        if becomesRegularMovie { try writeSessionLog() }
        try header.release { packet throws(WriterError) in try route(packet, into: format) }
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

    /// Whether the track's header still waits for its codec configuration.
    func awaitsConfiguration(streamIndex: Int) -> Bool {
        lock.withLock { deferredHeader?.awaitedStreams.contains(streamIndex) ?? false }
    }

    /// Settles the time scale and track flags in a fragmented file's movie
    /// box, in place, once it is written at the head of the file.
    private func patchFragmentedMovieHeader() throws(WriterError) {
        guard let io else { return }
        avio_flush(io.context)
        if let error = io.ioError { throw .io(path: outputPath, error: error) }
        let patcher = MoviePatcher(file: file)
        let boxes = try patcher.topLevelBoxes()
        let (_, movie) = try patcher.readMovie(boxes)
        let scale = try chooseMovieTimescale(movie)
        try patcher.patchInPlace(timescale: scale, tracks: trackPatches(movie: movie, edits: nil))
    }

    /// Puts the session log's box after the movie box, before the first
    /// fragment: through the muxer's I/O, which then goes on after it.
    private func writeSessionLog() throws(WriterError) {
        guard let io else { return }
        var log = SessionLog(trackCount: inputList.count)
        for (index, span) in spans.enumerated() { log.firstDecodeTimes[index] = span.firstDecode }
        log.sessions = relativeSessions().map { SessionLog.Session(start: $0.start, end: $0.end) }
        let offset = avio_tell(io.context)
        let bytes = log.box()
        bytes.withUnsafeBufferPointer { avio_write(io.context, $0.baseAddress, Int32($0.count)) }
        avio_flush(io.context)
        if let error = io.ioError { throw .io(path: outputPath, error: error) }
        headerBytes = avio_tell(io.context)
        sessionLog = log
        sessionLogOffset = offset
    }

    /// Rewrites the session log in place when what it says changed. Lock held.
    private func updateSessionLog(_ change: (inout SessionLog) -> Void) throws(WriterError) {
        guard var log = sessionLog, let offset = sessionLogOffset else { return }
        let before = log
        change(&log)
        guard log != before else { return }
        sessionLog = log
        do throws(SystemCallError) {
            try file.write(log.payload(), at: offset + 8)
        } catch {
            throw failLocked(.io(path: outputPath, error: error))
        }
    }

    /// The sessions as the samples of a file written in fragments are
    /// stamped: counted from the first session's start, moved by the
    /// timeline offset, as `placement` stamps samples. Lock held.
    private func relativeSessions() -> [SessionTimeline.Session] {
        guard let origin = timeline.origin else { return [] }
        return timeline.sessions.map { session in
            SessionTimeline.Session(start: shiftedByOffset(session.start - origin),
                                    end: session.end.map { shiftedByOffset($0 - origin) },
                                    fileStart: session.fileStart)
        }
    }

    /// The error for a failed muxer call: the write error underneath, if one caused it.
    private func ioFailure(_ error: FFmpegError) -> WriterError {
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

    /// Puts the sessions into the session log. Lock held.
    private func logSessions() throws(WriterError) {
        guard sessionLog != nil else { return }
        let sessions = relativeSessions().map { SessionLog.Session(start: $0.start, end: $0.end) }
        try updateSessionLog { $0.sessions = sessions }
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
        for input in inputs {
            do throws(WriterError) { try input.finishEncoding() } catch { throw fail(error) }
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

    // MARK: Called by inputs

    /// Where a sample at source time `time` goes: its media time (counted
    /// from the first session's start) with edit lists, or its file time
    /// otherwise; nil when it is to be left out. Throws when samples cannot
    /// be appended now.
    func placement(forSource time: MediaTime) throws(WriterError) -> (time: MediaTime, session: Int?)? {
        try lock.withLock { () throws(WriterError) in
            try checkAppendable()
            guard time.isNumeric else { throw .invalidState("sample times must be numeric, not \(time)") }
            let session = timeline.sessionIndex(forSource: time)
            if becomesRegularMovie {
                // Fragments: what is outside the sessions is left out; the
                // rest keeps its time, so a pause leaves a gap for the edits.
                guard let origin = timeline.origin, session != nil else { return nil }
                let relative = shiftedByOffset(time - origin)
                return relative.isNumeric ? (relative, session) : nil
            }
            if usesEditLists {
                guard let origin = timeline.origin else { return nil }
                let relative = time - origin
                return relative.isNumeric ? (relative, session) : nil
            }
            return timeline.fileTime(forSource: time).map { (shiftedByOffset($0), session) }
        }
    }

    /// For audio: the part of a buffer that falls in a session, and where
    /// it goes; nil when none of it does.
    func placement(forSource start: MediaTime, duration: MediaTime) throws(WriterError) -> (skip: MediaTime, time: MediaTime, keep: MediaTime)? {
        try lock.withLock { () throws(WriterError) in
            try checkAppendable()
            guard start.isNumeric, duration.isNumeric else { throw .invalidState("sample times must be numeric, not \(start)") }
            if becomesRegularMovie {
                guard let origin = timeline.origin, let (skip, keep) = timeline.overlap(start: start, duration: duration) else { return nil }
                return (skip, shiftedByOffset(start + skip - origin), keep)
            }
            if usesEditLists {
                guard let origin = timeline.origin else { return nil }
                return (.zero, start - origin, duration)
            }
            guard let (skip, keep) = timeline.overlap(start: start, duration: duration),
                  let time = timeline.fileTime(forSource: start + skip) else { return nil }
            return (skip, shiftedByOffset(time), keep)
        }
    }

    /// A file time moved later by the timeline offset. Exact where the two
    /// share a 32-bit timescale; otherwise (nanosecond capture stamps and a
    /// 1/48000 or 1/90000 startup delay) with the offset rounded to the
    /// time's own timescale, far finer than any track's.
    private func shiftedByOffset(_ time: MediaTime) -> MediaTime {
        let exact = time + timelineOffset
        if exact.isNumeric || !time.isNumeric { return exact }
        return time + timelineOffset.converted(toTimescale: time.timescale)
    }

    private func checkAppendable() throws(WriterError) {
        switch state {
        case .writing:
            if finishing { throw .invalidState("the writer is finishing; no more samples can be appended") }
            if !timeline.hasStarted { throw .invalidState("start a session before appending samples") }
        case .failed: throw failure ?? .invalidState("the writer has failed")
        default: throw .invalidState("samples can only be appended while writing (status: \(state.rawValue))")
        }
    }

    /// Hands one packet (timed in `timeBase`) to the muxer. A video
    /// track's latest packet is held back until the next one comes, so that
    /// at the end it can be made to last until the session's end.
    func write(packet: UnsafeMutablePointer<AVPacket>, timeBase: AVRational, streamIndex: Int) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard state == .writing, let format else { throw failure ?? .invalidState("the writer is not writing (status: \(state.rawValue))") }
            let stream = format.pointee.streams[streamIndex]!
            av_packet_rescale_ts(packet, timeBase, stream.pointee.time_base)
            packet.pointee.stream_index = Int32(streamIndex)
            payloadBytes += Int64(packet.pointee.size)
            packetCount += 1
            if let deferredHeader {
                do throws(WriterError) { try deferredHeader.keep(packet) } catch { throw failLocked(error) }
                return
            }
            try route(packet, into: format)
        }
    }

    /// A packet on its way to the muxer: video waits for the next packet of
    /// its track (see `write`); the rest goes straight in. Lock held.
    ///
    /// In fragments that become a regular movie every track's packets wait
    /// so, and each is made to last until the next of its track: the
    /// muxer starts a fragment's samples where the previous fragment's last
    /// one ends, so a gap (a pause) must be in that duration to stay in the
    /// file, where the edit lists expect it. (Sample tables state the same
    /// durations: the steps between decode times.)
    private func route(_ packet: UnsafeMutablePointer<AVPacket>, into format: UnsafeMutablePointer<AVFormatContext>) throws(WriterError) {
        let streamIndex = Int(packet.pointee.stream_index)
        guard spans[streamIndex].bridgesEveryGap || becomesRegularMovie else {
            try mux(packet, into: format)
            return
        }
        if heldPackets[streamIndex] == nil {
            guard let fresh = av_packet_alloc() else { throw failLocked(.ffmpeg(FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM)))) }
            heldPackets[streamIndex] = fresh
        }
        let held = heldPackets[streamIndex]!
        if held.pointee.size > 0 || held.pointee.side_data_elems > 0 {
            let ownDuration = held.pointee.duration
            if becomesRegularMovie, held.pointee.dts != cffmpeg_AV_NOPTS_VALUE, packet.pointee.dts != cffmpeg_AV_NOPTS_VALUE,
               packet.pointee.dts > held.pointee.dts {
                held.pointee.duration = packet.pointee.dts - held.pointee.dts
            }
            try mux(held, into: format, spanDuration: ownDuration)
        }
        av_packet_move_ref(held, packet)
    }

    /// Writes the video packets held back, each made to last until the end
    /// of the last session where it would end sooner: a frame shows until
    /// the next one, and the last until the recording stops, however long
    /// a camera took before the frame it did not deliver in time.
    private func writeHeldPackets(into format: UnsafeMutablePointer<AVFormatContext>) throws(WriterError) {
        let sessionEnd: MediaTime? = timeline.sessions.last.flatMap { last in
            guard last.end != nil, let origin = timeline.origin else { return nil }
            if becomesRegularMovie { return shiftedByOffset(last.end! - origin) }
            if usesEditLists { return last.end! - origin }
            return shiftedByOffset(SessionTimeline.totalDuration(timeline.sessions))
        }
        for (index, held) in heldPackets.enumerated() {
            guard let held, held.pointee.size > 0 else { continue }
            let timeBase = format.pointee.streams[index]!.pointee.time_base
            if spans[index].bridgesEveryGap, let sessionEnd, sessionEnd.isNumeric, held.pointee.pts != cffmpeg_AV_NOPTS_VALUE {
                let end = av_rescale_q_rnd(sessionEnd.value, AVRational(num: 1, den: sessionEnd.timescale), timeBase,
                                           AVRounding(AV_ROUND_DOWN.rawValue))
                let shownUntil = max(spans[index].runs.last?.end ?? 0, held.pointee.pts + max(0, held.pointee.duration))
                if end > shownUntil { held.pointee.duration = max(0, held.pointee.duration) + (end - shownUntil) }
            }
            try mux(held, into: format)
        }
    }

    /// av_interleaved_write_frame, with the track's span recorded (over
    /// `spanDuration` when given: the packet's own, before it was made to
    /// reach the next). Called with the lock held; a failure fails the writer.
    private func mux(_ packet: UnsafeMutablePointer<AVPacket>, into format: UnsafeMutablePointer<AVFormatContext>,
                     spanDuration: Int64? = nil) throws(WriterError) {
        let streamIndex = Int(packet.pointee.stream_index)
        var span = spans[streamIndex]
        let dts = packet.pointee.dts == cffmpeg_AV_NOPTS_VALUE ? packet.pointee.pts : packet.pointee.dts
        let isFirst = span.firstDecode == nil
        if isFirst { span.firstDecode = dts }
        span.cover(packet.pointee.pts, packet.pointee.pts + max(0, spanDuration ?? packet.pointee.duration))
        span.packets += 1
        if packet.pointee.size > 0 { span.tally(decode: dts, presentation: packet.pointee.pts, keyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0) }
        spans[streamIndex] = span
        if isFirst { try updateSessionLog { $0.firstDecodeTimes[streamIndex] = dts } }
        let status = av_interleaved_write_frame(format, packet)
        if status < 0 {
            throw failLocked(ioFailure(FFmpegError(call: "av_interleaved_write_frame(\(fileType.muxerName))", code: status)))
        }
    }

    /// Puts the writer into the failed state, the lock being held.
    private func failLocked(_ error: WriterError) -> WriterError {
        state = .failed
        failure = error
        return error
    }

    // MARK: Finalizing MP4 / QuickTime

    private func chooseMovieTimescale(_ movie: MovieBox) throws(WriterError) -> UInt32 {
        if settings.movieTimeScale > 0 { return UInt32(settings.movieTimeScale) }
        let tracks = movie.children?.filter { $0.type == "trak" } ?? []
        let scales = tracks.compactMap(MovieHeader.mediaTimescale)
        let videoIndex = inputList.firstIndex { $0.mediaType == .video }
        if let videoIndex, videoIndex < scales.count { return scales[videoIndex] }
        return scales.first ?? 1000
    }

    private func trackPatches(movie: MovieBox, edits: [[EditEntry]]?) throws(WriterError) -> [UInt32: TrackPatch] {
        let tracks = movie.children?.filter { $0.type == "trak" } ?? []
        guard tracks.count == inputList.count else {
            throw .malformedOutput("the file has \(tracks.count) tracks for \(inputList.count) inputs")
        }
        var patches = [UInt32: TrackPatch]()
        for (index, trak) in tracks.enumerated() {
            guard let tkhd = trak.child("tkhd") else { throw .malformedOutput("a track has no header") }
            let input = inputList[index]
            let group = groupList.firstIndex { $0.inputs.contains { $0 === input } }
            patches[MovieHeader.trackID(tkhd.payload)] = TrackPatch(
                edits: edits?[index], enabled: input.marksOutputTrackAsEnabled,
                alternateGroup: group.map { UInt16($0 + 1) } ?? 0)
        }
        return patches
    }

    /// Writes the edit lists that lay the sessions end to end, the movie
    /// time scale and track flags, and moves the index to the front if asked.
    private func finalizeMovie() throws(WriterError) {
        let patcher = MoviePatcher(file: file)
        let boxes = try patcher.topLevelBoxes()
        let (_, movie) = try patcher.readMovie(boxes)
        let movieScale = try chooseMovieTimescale(movie)
        let plan = editPlan(movie: movie, movieScale: movieScale, sessions: timeline.sessions, origin: timeline.origin)
        try patcher.finish(timescale: movieScale, totalDuration: plan?.duration,
                           tracks: trackPatches(movie: movie, edits: plan?.edits), faststart: settings.faststart)
    }

    /// The edit lists that lay the tracks written into `sessions` (source
    /// time counted from `origin`), and the movie's duration; nil before any
    /// session. Each track's media time scale is its stream time base.
    /// `firstDecodes` overrides where each track's media time 0 is (in its ticks).
    private func editPlan(movie: MovieBox, movieScale: UInt32, sessions: [SessionTimeline.Session],
                          origin: MediaTime?, firstDecodes: [Int64?]? = nil) -> (edits: [[EditEntry]], duration: UInt64)? {
        guard let origin else { return nil }
        let tracks = movie.children?.filter { $0.type == "trak" } ?? []
        let mediaScales = tracks.map { Int32(clamping: MovieHeader.mediaTimescale($0) ?? 1000) }
        let spansInTime = spans.enumerated().map { index, span -> SessionTimeline.TrackSpan? in
            let override = firstDecodes.flatMap { index < $0.count ? $0[index] : nil }
            guard let firstDecode = override ?? span.firstDecode, index < mediaScales.count else { return nil }
            let scale = mediaScales[index]
            return SessionTimeline.TrackSpan(
                runs: span.runs.map { (MediaTime(value: $0.start, timescale: scale), MediaTime(value: $0.end, timescale: scale)) },
                firstDecode: MediaTime(value: firstDecode, timescale: scale), bridgesGaps: span.bridgesEveryGap)
        }
        return SessionTimeline.editLists(sessions: sessions, origin: origin, tracks: spansInTime, mediaTimescales: mediaScales,
                                         movieTimescale: Int32(clamping: movieScale))
    }

    /// Turns the fragments written into a regular movie (see
    /// `MovieDefragmenter`): sample tables read back from the fragments,
    /// which must hold every sample handed to the muxer; the edit lists and
    /// durations the sessions give, as for a file written in one piece.
    private func finalizeFragmentsAsRegularMovie() throws(WriterError) {
        let index: FragmentIndex
        do throws(FragmentIndex.ReadFailure) {
            index = try FragmentIndex.read(file)
        } catch {
            switch error {
            case .io(let error): throw .io(path: outputPath, error: error)
            case .problem(let problem): throw .malformedOutput("the fragments cannot be read back: \(problem)")
            }
        }
        for (position, track) in index.tracks.enumerated() where position < spans.count {
            guard track.count == spans[position].samples, !track.isCut else {
                throw .malformedOutput("track \(position + 1) has \(track.count) samples in its fragments; \(spans[position].samples) were written")
            }
        }
        // Media time 0 of each track is its first sample. Should the muxer
        // have moved the first sample, the others tell where 0 is.
        let firstDecodes = index.tracks.enumerated().map { position, track -> Int64? in
            guard position < spans.count, let last = spans[position].lastDecode, let fileFirst = track.decodeTimes.first,
                  let fileLast = track.decodeTimes.last else { return nil }
            return last - (fileLast - fileFirst)
        }
        let movieScale = try chooseMovieTimescale(index.movie)
        let plan = editPlan(movie: index.movie, movieScale: movieScale, sessions: relativeSessions(),
                            origin: timeline.origin.map { _ in .zero }, firstDecodes: firstDecodes)
        let movie = try MovieDefragmenter.regularMovie(from: index, timescale: movieScale, totalDuration: plan?.duration,
                                                       patches: trackPatches(movie: index.movie, edits: plan?.edits))
        if index.fragmentCount == 0 {
            // Nothing was recorded: a regular movie that plays nothing.
            try MovieDefragmenter(file: file).replaceInPlace(index, movie: movie)
        } else {
            _ = try MovieDefragmenter(file: file).convert(index, movie: movie)
        }
    }
}

/// Inputs whose tracks are alternates of each other, such as two
/// microphones recorded side by side: players play one, the default.
public final class AssetWriterInputGroup: Sendable {
    public let inputs: [AssetWriterInput]
    /// The input whose track is enabled; the others are disabled.
    public let defaultInput: AssetWriterInput?

    public init(inputs: [AssetWriterInput], defaultInput: AssetWriterInput?) {
        self.inputs = inputs
        self.defaultInput = defaultInput
    }
}
