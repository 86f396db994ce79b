import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// One track of an `AssetWriter`'s file, like AVAssetWriterInput: created
/// with a media type's output settings, it takes raw frames (converted and
/// encoded), raw audio (resampled and encoded), or compressed samples
/// (written unchanged, for `.passthrough` settings).
///
/// Appends are synchronous: when one returns, the sample has been encoded
/// and handed to the muxer. An input may be fed from its own thread.
///
/// Unlike AVAssetWriterInput, whose appends answer false, an append that
/// cannot be done throws, and says why: a frame the input cannot encode
/// (a pixel format no converter reads, a size it cannot lay out, a
/// compressed frame its decoder cannot read, a JPEG cut short) is refused
/// with an error and leaves nothing in the file, never a grey or empty
/// picture; the next sample may follow.
public final class AssetWriterInput: @unchecked Sendable {
    // @unchecked: the encoder (an FFmpeg context) and bookkeeping state are guarded by `lock`, the decoder by
    // `decodeLock` (taken first), here and in the AssetWriterInput+*.swift extensions; the configuration
    // properties are set before writing starts.
    public let outputSettings: OutputSettings
    public var mediaType: MediaType { outputSettings.mediaType }

    /// The track's media time scale; 0 (the default) uses 90000 for video
    /// and the sample rate for audio. Set it before writing starts.
    public var mediaTimeScale: Int32 = 0

    /// Whether the track is enabled (plays by default). Adding the input to
    /// a group sets this: only the group's default input stays enabled.
    public var marksOutputTrackAsEnabled = true

    /// Whether samples come from a live source. Real-time inputs get
    /// encoder settings that keep latency low.
    public var expectsMediaDataInRealTime = false

    /// How the video is shown, as AVAssetWriterInput's `transform`: turned
    /// by a right angle and mirrored, written as the track's display matrix
    /// (MP4 and QuickTime; other containers play the picture as it is).
    /// Set it before writing starts.
    public var transform = VideoTransform.identity

    /// The track's language as an ISO 639-2 code (`eng`), where the container records one.
    public var languageCode: String?

    /// The track's name, such as the camera it came from: the handler name
    /// in MP4 and QuickTime (the one track-level text they keep), the track
    /// title in Matroska and WebM. Read back as `MediaInfo.Track.title`.
    public var title: String?

    weak var writer: AssetWriter?
    let lock = Lock()
    /// Guards `decoder`; taken before `lock`, never inside it.
    let decodeLock = Lock()
    /// Decodes compressed frames appended to an input that encodes (see `setUpDecoding`).
    var decoder: CompressedFrameDecoder?
    var streamIndex = -1
    /// Whether compressed samples with an owner go to the muxer without a
    /// copy: only in a file with this one track (see `appendCompressed`).
    var lendsPacketMemory = false
    var videoEncoder: VideoEncoder?
    var audioEncoder: AudioEncoder?
    var timeBase = AVRational(num: 1, den: 90000)
    var finished = false
    var packet: UnsafeMutablePointer<AVPacket>?
    // Video bookkeeping, in `timeBase` ticks.
    var lastTime: Int64?
    var lastDecodeTime: Int64?
    var lastKeyframeTime: Int64?
    var keyframeIntervalTicks: Int64?
    var pendingDurations: [Int64: Int64] = [:]
    var explicitDuration: Set<Int64> = []
    var expectedFrameTicks: Int64?
    /// A passthrough stream that lost samples waits for a keyframe.
    var needsKeyframe = true
    /// The session the last frame fell in.
    var lastSession: Int?
    /// Whether the audio encoder's priming (its first packet, which decodes
    /// to the silence before the first sample) is left out of the file, so
    /// that the audio starts with its first sample, at the video's start, in
    /// every container and for every reader: Matroska and MPEG-TS cannot tell
    /// a reader to skip AAC's priming, and readers that honour an MP4 edit
    /// list's start for it disagree on what it moves (mkvmerge moves the
    /// video instead). The first packet kept decodes with a fade-in of one
    /// codec frame (21 ms of AAC at 48 kHz). Opus keeps its priming, which
    /// its own header says to skip (pre-skip, Matroska's CodecDelay).
    var dropsPriming = false
    /// Audio: the encoder time of the first sample appended.
    var firstAudioTime: Int64?
    var lastPassthroughTime: Int64?
    var shortestStep: Int64?
    var lastInterval: Int64?
    var lastSentDecodeTime: Int64?
    var videoSettings: VideoOutputSettings?
    var globalHeader = false
    /// Whether the encoder still waits for the frame rate the first frames
    /// give (settings without an expected frame duration), and the first
    /// frame, copied, while it waits (see `settleFrameRate`).
    var frameRatePending = false
    var heldFrame: HeldFrame?

    public init(outputSettings: OutputSettings) {
        self.outputSettings = outputSettings
    }

    deinit {
        if packet != nil { av_packet_free(&packet) }
    }

    /// True while the writer is writing and this input is not finished.
    public var isReadyForMoreMediaData: Bool {
        lock.withLock { !finished } && writer?.status == .writing
    }

    /// The encoder in use ("libx264", "aac" …), nil for passthrough or before writing starts.
    public var encoderName: String? { lock.withLock { encoderInUse } }
    var encoderInUse: String?

    /// Video frames put into the file so far: handed to the encoder, or to
    /// the muxer as they are. What a recording reports as its frames.
    public var writtenFrameCount: Int { lock.withLock { framesWritten } }
    var framesWritten = 0

    /// Audio sample frames (one per channel set, at the track's rate) put
    /// into the file so far: the part of each buffer that fell in a
    /// session, whichever session that was, taken by the encoder (not what
    /// a step back in the stamps made it drop), as the resampler made them
    /// (a device's slow or fast clock stretched or squeezed), and the
    /// silence that fills a jump in the stamps (`writtenSilenceSampleCount`).
    /// Samples the resampler still holds count once the input is finished.
    public var writtenAudioSampleCount: Int { writtenAudioCounts.samples }
    /// Both audio counts, read at once.
    var writtenAudioCounts: (samples: Int, silence: Int) {
        lock.withLock { audioEncoder.map { (Int($0.samplesQueued), Int($0.silenceQueued)) } ?? releasedAudioCounts }
    }
    /// The encoder's counts, kept when it is let go.
    var releasedAudioCounts = (samples: 0, silence: 0)

    /// Of `writtenAudioSampleCount`, the sample frames of silence the input
    /// put in where its samples' time stamps jumped ahead (samples lost
    /// before they reached it): the track stays as long as its time stamps
    /// say, in every container.
    public var writtenSilenceSampleCount: Int { writtenAudioCounts.silence }

    /// Whether, as the writer finishes, audio that ends before the last
    /// session's end (its tail lost on the way: a process stopped near the
    /// cut) is filled with silence up to there, as a gap inside it is. Set
    /// by a recording for its live microphones; a device that went away
    /// leaves its track where its audio ended.
    var fillsAudioToSessionEnd: Bool {
        get { lock.withLock { fillsToSessionEnd } }
        set { lock.withLock { fillsToSessionEnd = newValue } }
    }
    var fillsToSessionEnd = false
    /// Whether audio whose first sample lands more than a codec frame after
    /// the file's start is preceded by silence from there: set by a
    /// recording for a file it switched to while its microphones ran on.
    var fillsAudioFromSessionStart: Bool {
        get { lock.withLock { fillsFromSessionStart } }
        set { lock.withLock { fillsFromSessionStart = newValue } }
    }
    var fillsFromSessionStart = false

    /// Compressed frames left out because decoding cannot start at them:
    /// those before a stream's first keyframe (a camera joined mid-GOP), or
    /// before the next one after frames were left out.
    public var framesSkippedBeforeKeyframe: Int { lock.withLock { skippedBeforeKeyframe } }
    var skippedBeforeKeyframe = 0

    /// How long before its input's time the encoder's first packet starts:
    /// audio priming, or the decode delay of reordered video frames.
    var startupDelay: MediaTime {
        lock.withLock {
            if let audioEncoder {
                if dropsPriming { return .zero }
                let padding = audioEncoder.context.pointee.initial_padding
                return MediaTime(value: Int64(padding), timescale: audioEncoder.sampleRate)
            }
            if let videoEncoder, videoEncoder.context.pointee.has_b_frames > 0 {
                let frame = expectedFrameTicks ?? Int64(timeBase.den / 30)
                return MediaTime(value: frame * Int64(videoEncoder.context.pointee.has_b_frames), timescale: timeBase.den)
            }
            return .zero
        }
    }

    /// How many times a conversion buffer was allocated for raw frames (one
    /// in steady state).
    var conversionBufferAllocations: Int { lock.withLock { videoEncoder?.bufferAllocations ?? 0 } }

    // MARK: Setup (called by the writer under its lock)

    func prepare(stream: UnsafeMutablePointer<AVStream>, index: Int, isOnlyTrack: Bool, globalHeader: Bool,
                 fragmentInterval: MediaTime?) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            streamIndex = index
            lendsPacketMemory = isOnlyTrack
            guard let packet = av_packet_alloc() else { throw .ffmpeg(FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM))) }
            self.packet = packet
            if marksOutputTrackAsEnabled { stream.pointee.disposition |= AV_DISPOSITION_DEFAULT }
            if let languageCode { av_dict_set(&stream.pointee.metadata, "language", languageCode, 0) }
            if outputSettings.mediaType == .video, transform != .identity {
                guard let matrix = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * MemoryLayout<Int32>.size) else {
                    throw .ffmpeg(FFmpegError(call: "av_stream_new_side_data", code: cffmpeg_averror(ENOMEM)))
                }
                matrix.withMemoryRebound(to: Int32.self, capacity: 9) { values in
                    // Read back by av_display_rotation_get (ffprobe's "rotation") as
                    // the negated angle, as a phone's portrait video reads -90.
                    av_display_rotation_set(values, transform.rotationAngle)
                    if transform.isMirrored { av_display_matrix_flip(values, 1, 0) }
                }
            }
            if let title {
                av_dict_set(&stream.pointee.metadata, "title", title, 0)
                av_dict_set(&stream.pointee.metadata, "handler_name", title, 0)
            }
            switch outputSettings {
            case .video(var settings):
                if expectsMediaDataInRealTime, settings.encoderOptions["tune"] == nil,
                   EncoderCatalog.encoderName(for: settings.codec) == "libx264" {
                    settings.encoderOptions["tune"] = "zerolatency"
                }
                timeBase = AVRational(num: 1, den: mediaTimeScale > 0 ? mediaTimeScale : 90000)
                videoSettings = settings
                self.globalHeader = globalHeader
                stream.pointee.time_base = timeBase
                // Without a frame duration the encoder is opened once the
                // frames give their rate (see `settleFrameRate`), and at the
                // provisional rate now so that bad settings fail here: except
                // SVT-AV1, which, once opened, cannot be closed before it
                // was sent a frame.
                frameRatePending = settings.expectedFrameDuration == nil
                if frameRatePending, EncoderCatalog.encoderName(for: settings.codec) == "libsvtav1" {
                    encoderInUse = "libsvtav1"
                } else {
                    var opening = settings
                    if frameRatePending { opening.expectedFrameDuration = Self.provisionalFrameDuration }
                    let encoder = try VideoEncoder(settings: opening, timeBase: timeBase, globalHeader: globalHeader)
                    videoEncoder = encoder
                    encoderInUse = encoder.encoderName
                    try copyParameters(from: encoder.context, to: stream)
                    stream.pointee.avg_frame_rate = encoder.context.pointee.framerate
                }
                expectedFrameTicks = settings.expectedFrameDuration.flatMap(ticks)
                var interval = settings.maxKeyFrameIntervalDuration.flatMap(ticks)
                if let fragment = fragmentInterval.flatMap(ticks) { interval = min(interval ?? .max, fragment) }
                keyframeIntervalTicks = interval.flatMap { $0 > 0 ? $0 : nil }
            case .audio(let settings):
                let encoder = try AudioEncoder(settings: settings, globalHeader: globalHeader)
                audioEncoder = encoder
                // Opus carries its priming in its own header (pre-skip,
                // Matroska's CodecDelay), which every reader honours.
                dropsPriming = settings.codec != .opus && encoder.context.pointee.initial_padding > 0
                encoderInUse = encoder.encoderName
                timeBase = encoder.context.pointee.time_base
                try copyParameters(from: encoder.context, to: stream)
                stream.pointee.time_base = mediaTimeScale > 0 ? AVRational(num: 1, den: mediaTimeScale) : timeBase
            case .passthrough(let format):
                let codec = format.codecID
                guard codec != AV_CODEC_ID_NONE else { throw .invalidSettings("'\(format.codecName)' is not a codec libavcodec knows") }
                let parameters = stream.pointee.codecpar!
                parameters.pointee.codec_id = codec
                switch format.mediaType {
                case .video:
                    guard format.width > 0, format.height > 0 else { throw .invalidSettings("passthrough video needs its frame size") }
                    parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
                    parameters.pointee.width = Int32(format.width)
                    parameters.pointee.height = Int32(format.height)
                    timeBase = AVRational(num: 1, den: mediaTimeScale > 0 ? mediaTimeScale : 90000)
                case .audio:
                    guard format.sampleRate > 0, format.channels > 0 else { throw .invalidSettings("passthrough audio needs its sample rate and channel count") }
                    parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
                    parameters.pointee.sample_rate = Int32(format.sampleRate)
                    av_channel_layout_default(&parameters.pointee.ch_layout, Int32(format.channels))
                    timeBase = AVRational(num: 1, den: mediaTimeScale > 0 ? mediaTimeScale : Int32(format.sampleRate))
                }
                if !format.extradata.isEmpty {
                    let size = format.extradata.count
                    guard let extradata = av_mallocz(size + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                        throw .ffmpeg(FFmpegError(call: "av_mallocz", code: cffmpeg_averror(ENOMEM)))
                    }
                    format.extradata.withUnsafeBytes { extradata.copyMemory(from: $0.baseAddress!, byteCount: size) }
                    parameters.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
                    parameters.pointee.extradata_size = Int32(size)
                }
                stream.pointee.time_base = timeBase
                needsKeyframe = !format.isIntraOnly
            }
        }
    }

    func copyParameters(from context: UnsafeMutablePointer<AVCodecContext>, to stream: UnsafeMutablePointer<AVStream>) throws(WriterError) {
        let status = avcodec_parameters_from_context(stream.pointee.codecpar, context)
        if status < 0 { throw .ffmpeg(FFmpegError(call: "avcodec_parameters_from_context", code: status)) }
    }

    /// A time in this input's time base, or nil when it does not fit.
    func ticks(_ time: MediaTime) -> Int64? {
        guard time.isNumeric else { return nil }
        let converted = time.converted(toTimescale: timeBase.den)
        return converted.isNumeric ? converted.value : nil
    }

    func releaseEncoders() {
        lock.withLock {
            videoEncoder = nil
            if let audioEncoder { releasedAudioCounts = (Int(audioEncoder.samplesQueued), Int(audioEncoder.silenceQueued)) }
            audioEncoder = nil
            heldFrame = nil
            finished = true
        }
    }

    /// Settings errors concern one sample; anything else fails the writer.
    func failIfWriterError(_ error: WriterError) -> WriterError {
        if case .invalidSettings = error { return error }
        if case .invalidState = error { return error }
        if case .damagedSample = error { return error }
        return writer?.fail(error) ?? error
    }

    func sendEncoded(_ packet: UnsafeMutablePointer<AVPacket>) throws(WriterError) {
        if mediaType == .video {
            let pts = packet.pointee.pts
            if let duration = pendingDurations.removeValue(forKey: pts) {
                if packet.pointee.duration <= 0 { packet.pointee.duration = duration }
                explicitDuration.remove(pts)
            }
        }
        guard let writer else { throw .invalidState("the input has not been added to a writer") }
        if dropsPriming, let first = firstAudioTime, packet.pointee.pts != cffmpeg_AV_NOPTS_VALUE,
           packet.pointee.pts + max(0, packet.pointee.duration) <= first {
            return
        }
        // Decode times must increase.
        if packet.pointee.dts != cffmpeg_AV_NOPTS_VALUE {
            if let last = lastSentDecodeTime, packet.pointee.dts <= last {
                packet.pointee.dts = last + 1
                if packet.pointee.pts != cffmpeg_AV_NOPTS_VALUE && packet.pointee.pts < packet.pointee.dts { packet.pointee.pts = packet.pointee.dts }
            }
            lastSentDecodeTime = packet.pointee.dts
        }
        try writer.write(packet: packet, timeBase: timeBase, streamIndex: streamIndex)
    }

    // MARK: Finishing

    /// Marks the input finished: what the encoder still holds is written,
    /// and no more samples are taken.
    public func markAsFinished() throws(WriterError) {
        try finishEncoding()
    }

    /// Encodes the pictures a decoder still holds (frames reordered), while
    /// the writer still takes frames: before it starts finishing.
    func flushDecoder() throws(WriterError) {
        try decodeLock.withLock { () throws(WriterError) in
            defer { decoder = nil }
            try decoder?.flush { frame, time throws(WriterError) in try appendFrame(frame, presentationTime: time, duration: nil) }
        }
    }

    func finishEncoding() throws(WriterError) {
        try flushDecoder()
        try lock.withLock { () throws(WriterError) in
            guard !finished else { return }
            finished = true
            if frameRatePending { try settleFrameRateAtEnd() }
            if let videoEncoder {
                try videoEncoder.flush { packet throws(WriterError) in try self.sendEncoded(packet) }
            } else if let audioEncoder {
                try audioEncoder.flush { packet throws(WriterError) in try self.sendEncoded(packet) }
            }
        }
    }
}
