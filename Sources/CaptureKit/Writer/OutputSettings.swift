import CFFmpeg

/// A video compression format a writer input can encode to.
public enum VideoCodec: String, Sendable, CaseIterable, Codable {
    case h264, hevc, vp9, av1, mjpeg

    /// libavcodec encoders for this codec, in order of preference.
    var encoderNames: [String] {
        switch self {
        case .h264: return ["libx264"]
        case .hevc: return ["libx265"]
        case .vp9: return ["libvpx-vp9"]
        case .av1: return ["libsvtav1", "libaom-av1", "librav1e"]
        case .mjpeg: return ["mjpeg"]
        }
    }

    var codecID: AVCodecID {
        switch self {
        case .h264: return AV_CODEC_ID_H264
        case .hevc: return AV_CODEC_ID_HEVC
        case .vp9: return AV_CODEC_ID_VP9
        case .av1: return AV_CODEC_ID_AV1
        case .mjpeg: return AV_CODEC_ID_MJPEG
        }
    }
}

/// An audio format a writer input can encode to.
public enum AudioCodec: Sendable, Hashable, Codable {
    case aac, opus, flac
    /// Uncompressed samples, little-endian.
    case pcm(PCMSampleFormat)

    /// The codec named as capctl spells it: aac, opus, flac, pcm_s16le,
    /// pcm_s24le, pcm_s32le, pcm_f32le.
    public init?(name: String) {
        switch name.lowercased() {
        case "aac": self = .aac
        case "opus": self = .opus
        case "flac": self = .flac
        case "pcm", "pcm_s16le": self = .pcm(.s16)
        case "pcm_s24le": self = .pcm(.s24)
        case "pcm_s32le": self = .pcm(.s32)
        case "pcm_f32le": self = .pcm(.f32)
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .aac: return "aac"
        case .opus: return "opus"
        case .flac: return "flac"
        case .pcm(let format): return "pcm_\(format.rawValue)le"
        }
    }

    var encoderNames: [String] {
        switch self {
        case .aac: return ["aac"]
        case .opus: return ["libopus"]
        case .flac: return ["flac"]
        case .pcm(let format): return ["pcm_\(format.rawValue)le"]
        }
    }

    var codecID: AVCodecID {
        switch self {
        case .aac: return AV_CODEC_ID_AAC
        case .opus: return AV_CODEC_ID_OPUS
        case .flac: return AV_CODEC_ID_FLAC
        case .pcm(.s16): return AV_CODEC_ID_PCM_S16LE
        case .pcm(.s24): return AV_CODEC_ID_PCM_S24LE
        case .pcm(.s32): return AV_CODEC_ID_PCM_S32LE
        case .pcm(.f32): return AV_CODEC_ID_PCM_F32LE
        }
    }
}

/// Sample layouts for PCM output.
public enum PCMSampleFormat: String, Sendable, Hashable, Codable, CaseIterable {
    case s16, s24, s32, f32
}

/// How an input encodes video: like AVVideoSettings, codec and size first,
/// then rate control and keyframe placement.
public struct VideoOutputSettings: Sendable, Hashable {
    public var codec: VideoCodec
    public var width: Int
    public var height: Int
    /// The encoder's pixel format; nil picks the encoder's own 4:2:0 format
    /// (yuv420p, or full-range yuvj420p for MJPEG).
    public var pixelFormat: PixelFormat?
    /// Average bit rate in bits per second; nil leaves rate control to `quality` or the encoder.
    public var bitRate: Int?
    /// Constant-quality level: CRF for H.264, HEVC, VP9 and AV1 (lower is
    /// better), the JPEG quantizer (2–31) for MJPEG.
    public var quality: Int?
    /// The encoder's speed preset (`ultrafast` … `veryslow` for x264/x265,
    /// 0–13 for SVT-AV1, the cpu-used level for VP9).
    public var preset: String?
    /// The speed presets libx264 and libx265 know, fastest first.
    public static let x26xPresets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]
    /// At most this many frames from one keyframe to the next.
    public var maxKeyFrameInterval: Int?
    /// At most this much time from one keyframe to the next; a keyframe is
    /// forced when it is reached.
    public var maxKeyFrameIntervalDuration: MediaTime?
    /// The expected time between frames, for rate control; frames may still
    /// come at any time.
    public var expectedFrameDuration: MediaTime?
    /// Further encoder options by their libavcodec names (`tune=zerolatency`).
    public var encoderOptions: [String: String]

    public init(codec: VideoCodec, width: Int, height: Int, pixelFormat: PixelFormat? = nil, bitRate: Int? = nil,
                quality: Int? = nil, preset: String? = nil, maxKeyFrameInterval: Int? = nil,
                maxKeyFrameIntervalDuration: MediaTime? = nil, expectedFrameDuration: MediaTime? = nil,
                encoderOptions: [String: String] = [:]) {
        self.codec = codec
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.bitRate = bitRate
        self.quality = quality
        self.preset = preset
        self.maxKeyFrameInterval = maxKeyFrameInterval
        self.maxKeyFrameIntervalDuration = maxKeyFrameIntervalDuration
        self.expectedFrameDuration = expectedFrameDuration
        self.encoderOptions = encoderOptions
    }
}

/// How an input encodes audio: codec, rate, channels and bit rate.
public struct AudioOutputSettings: Sendable, Hashable {
    public var codec: AudioCodec
    public var sampleRate: Int
    public var channels: Int
    /// Bits per second for lossy codecs; nil lets the encoder choose.
    public var bitRate: Int?
    /// Further encoder options by their libavcodec names.
    public var encoderOptions: [String: String]

    public init(codec: AudioCodec, sampleRate: Int, channels: Int, bitRate: Int? = nil, encoderOptions: [String: String] = [:]) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitRate = bitRate
        self.encoderOptions = encoderOptions
    }
}

/// What already-compressed samples are, for an input that writes them as
/// they come (passthrough): like a source format hint.
public struct CompressedFormat: Sendable, Hashable {
    public var mediaType: MediaType
    /// The codec by its libavcodec name: `mjpeg`, `h264`, `hevc`, `aac` …
    public var codecName: String
    public var width: Int
    public var height: Int
    public var sampleRate: Int
    public var channels: Int
    /// Codec configuration (avcC, hvcC, AudioSpecificConfig …); may be empty
    /// for codecs that carry it in band, such as H.264 in Annex B form.
    public var extradata: [UInt8]
    /// Whether every sample is a keyframe (MJPEG, PCM); decides whether a
    /// stream can resume at any sample after a gap.
    public var isIntraOnly: Bool

    public static func video(codecName: String, width: Int, height: Int, extradata: [UInt8] = []) -> CompressedFormat {
        let intra = ["mjpeg", "rawvideo", "png", "prores", "dnxhd"].contains(codecName)
        return CompressedFormat(mediaType: .video, codecName: codecName, width: width, height: height,
                                sampleRate: 0, channels: 0, extradata: extradata, isIntraOnly: intra)
    }

    public static func audio(codecName: String, sampleRate: Int, channels: Int, extradata: [UInt8] = []) -> CompressedFormat {
        CompressedFormat(mediaType: .audio, codecName: codecName, width: 0, height: 0, sampleRate: sampleRate,
                         channels: channels, extradata: extradata, isIntraOnly: true)
    }

    public init(mediaType: MediaType, codecName: String, width: Int, height: Int, sampleRate: Int, channels: Int,
                extradata: [UInt8], isIntraOnly: Bool) {
        self.mediaType = mediaType
        self.codecName = codecName
        self.width = width
        self.height = height
        self.sampleRate = sampleRate
        self.channels = channels
        self.extradata = extradata
        self.isIntraOnly = isIntraOnly
    }

    var codecID: AVCodecID { avcodec_descriptor_get_by_name(codecName)?.pointee.id ?? AV_CODEC_ID_NONE }
}

/// An input's output settings: encode video, encode audio, or write
/// compressed samples unchanged.
public enum OutputSettings: Sendable, Hashable {
    case video(VideoOutputSettings)
    case audio(AudioOutputSettings)
    case passthrough(CompressedFormat)

    public var mediaType: MediaType {
        switch self {
        case .video: return .video
        case .audio: return .audio
        case .passthrough(let format): return format.mediaType
        }
    }

    /// The codec's name, as messages print it.
    public var codecName: String {
        switch self {
        case .video(let settings): return settings.codec.rawValue
        case .audio(let settings): return settings.codec.name
        case .passthrough(let format): return format.codecName
        }
    }

    var codecID: AVCodecID {
        switch self {
        case .video(let settings): return settings.codec.codecID
        case .audio(let settings): return settings.codec.codecID
        case .passthrough(let format): return format.codecID
        }
    }
}

/// The encoders this build of libavcodec has.
package enum EncoderCatalog {
    /// The first present encoder for a list of names, or nil.
    static func firstEncoder(_ names: [String]) -> (name: String, codec: UnsafePointer<AVCodec>)? {
        for name in names {
            if let codec = avcodec_find_encoder_by_name(name) { return (name, codec) }
        }
        return nil
    }

    /// The encoder that would be used for a video codec, or nil when none is present.
    package static func encoderName(for codec: VideoCodec) -> String? { firstEncoder(codec.encoderNames)?.name }

    /// The encoder that would be used for an audio codec, or nil when none is present.
    package static func encoderName(for codec: AudioCodec) -> String? { firstEncoder(codec.encoderNames)?.name }
}
