/// How a file output encodes and lays out what it records: the codecs and
/// their rate control, fragments, the index position and metadata. Track
/// sizes, rates and channel counts come from the inputs' formats.
public struct RecordingSettings: Sendable, Hashable {
    /// How video is written.
    public enum VideoEncoding: Sendable, Hashable {
        /// The container's usual codec (H.264; VP9 in WebM).
        case automatic
        case encode(VideoCodec)
        /// Compressed frames from the camera (MJPEG, H.264) written as they come.
        case passthrough
    }

    public var video: VideoEncoding = .automatic
    /// Constant-quality level (CRF; the JPEG quantizer for MJPEG).
    public var quality: Int?
    /// Video bits per second.
    public var videoBitRate: Int?
    /// At most this many video bits per second over any stretch of
    /// `rateBufferSize` bits (the encoder's VBV): a cap for links of constant
    /// rate. nil: no cap.
    public var maxBitRate: Int?
    /// The rate cap's buffer, in bits; nil: two seconds at `maxBitRate`.
    public var rateBufferSize: Int?
    /// The encoder's speed preset (`ultrafast` … `veryslow` for x264).
    public var encoderPreset: String?
    /// At most this long between keyframes.
    public var keyframeInterval: MediaTime?
    /// The encoder's pixel format (nil: its 4:2:0 default).
    public var encoderPixelFormat: PixelFormat?
    /// Further video encoder options by libavcodec name (`threads=2`).
    public var videoEncoderOptions: [String: String] = [:]
    /// nil: the container's usual codec (AAC; Opus in WebM and Ogg; FLAC in FLAC; PCM in WAV).
    public var audioCodec: AudioCodec?
    public var audioBitRate: Int?
    /// The container; nil takes it from each file's extension.
    public var fileType: FileType?
    /// Movie fragments for MP4/MOV/M4A (invalid: one index at the end).
    public var fragmentInterval: MediaTime = MediaTime(value: 1, timescale: 1)
    /// Index before the media data (classic files only).
    public var optimizeForNetworkUse = false
    /// Fragmented files stay fragmented when finished, instead of becoming
    /// regular movies (see `AssetWriter.keepsMovieFragments`).
    public var keepsMovieFragments = false
    public var metadata: [MetadataItem] = []
    /// Several audio inputs become alternate tracks of one group (the first enabled).
    public var audioTracksAreAlternates = false
    /// Whether samples come live (lower-latency encoder settings).
    public var realTime = true
    /// Record a time-lapse: a frame every interval of capture time, played
    /// at its frame rate (nil: every frame, at capture time). Files only:
    /// the video is encoded (never copied), and audio is left out.
    public var timeLapse: TimeLapse?

    public init() {}

    /// The container's usual video codec (what `.automatic` encodes).
    public static func defaultVideoCodec(for fileType: FileType) -> VideoCodec {
        fileType == .webm ? .vp9 : .h264
    }

    /// The container's usual audio codec.
    static func defaultAudioCodec(for fileType: FileType) -> AudioCodec {
        switch fileType {
        case .webm, .ogg, .opus: return .opus
        case .flac: return .flac
        case .wav: return .pcm(.s16)
        case .matroska, .mp4, .quickTimeMovie, .m4a, .mpegTS: return .aac
        }
    }

    /// The writer input settings for an input with `format`, or the reason it cannot be written to `fileType`.
    func outputSettings(forVideo format: CaptureVideoFormat, fileType: FileType) throws(RecordingError) -> OutputSettings {
        let settings: OutputSettings
        switch (video, format.layout) {
        case (.passthrough, _) where timeLapse != nil:
            throw .unsupported("a time-lapse keeps some of the camera's frames and times them anew, so its video is encoded; leave out --video-codec copy")
        case (.passthrough, .compressed(let codecName)):
            // A camera's H.264/HEVC brings its parameter sets only with its
            // keyframes: the writer's header waits for the first one.
            settings = .passthrough(.video(codecName: codecName, width: format.width, height: format.height, extradata: format.codecConfiguration))
        case (.passthrough, .raw(let pixelFormat, _)):
            throw .copyNeedsCompressedFrames(pixelFormat: pixelFormat.description)
        case (.automatic, _), (.encode, _):
            let codec: VideoCodec
            if case .encode(let chosen) = video { codec = chosen } else { codec = Self.defaultVideoCodec(for: fileType) }
            settings = .video(try videoOutputSettings(for: format, codec: codec))
        }
        guard AssetWriter.canApply(outputSettings: settings, forMediaType: .video, fileType: fileType) else {
            throw .containerCannotHold(fileType: fileType, codec: settings.codecName, mediaType: .video)
        }
        return settings
    }

    /// The encoder settings for a camera with `format`, encoded as `codec`.
    func videoOutputSettings(for format: CaptureVideoFormat, codec: VideoCodec) throws(RecordingError) -> VideoOutputSettings {
        guard EncoderCatalog.encoderName(for: codec) != nil else {
            throw .unsupported("no \(codec.rawValue) encoder is available in this FFmpeg (it needs \(codec.encoderNames.joined(separator: " or ")))")
        }
        var options = videoEncoderOptions
        // Live capture encodes without reordering or look-ahead: each frame
        // comes out as it goes in, so encoders can be shared (see VideoCompressor).
        if realTime, codec == .h264 || codec == .hevc, options["tune"] == nil { options["tune"] = "zerolatency" }
        if let maxBitRate {
            options["maxrate"] = String(maxBitRate)
            options["bufsize"] = String(rateBufferSize ?? 2 * maxBitRate)
        }
        return VideoOutputSettings(codec: codec, width: format.width, height: format.height, pixelFormat: encoderPixelFormat,
                                   bitRate: videoBitRate, quality: quality, preset: encoderPreset,
                                   maxKeyFrameIntervalDuration: keyframeInterval,
                                   expectedFrameDuration: timeLapse?.frameDuration ?? format.frameDuration,
                                   encoderOptions: options)
    }

    func outputSettings(forAudio format: CaptureAudioFormat, fileType: FileType) throws(RecordingError) -> OutputSettings {
        let codec = audioCodec ?? Self.defaultAudioCodec(for: fileType)
        guard EncoderCatalog.encoderName(for: codec) != nil else {
            throw .unsupported("no \(codec.name) encoder is available in this FFmpeg")
        }
        // Opus takes 48 kHz (and a few lower rates); the writer resamples.
        let rate = codec == .opus && ![8000, 12000, 16000, 24000, 48000].contains(format.sampleRate) ? 48000 : format.sampleRate
        let settings = OutputSettings.audio(AudioOutputSettings(codec: codec, sampleRate: rate, channels: format.channels, bitRate: audioBitRate))
        guard AssetWriter.canApply(outputSettings: settings, forMediaType: .audio, fileType: fileType) else {
            throw .containerCannotHold(fileType: fileType, codec: codec.name, mediaType: .audio)
        }
        return settings
    }
}
