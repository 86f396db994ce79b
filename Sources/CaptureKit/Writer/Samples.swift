import CFFmpeg

/// The layout of audio samples handed to a writer input.
public enum AudioSampleFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case u8, s16, s32, f32, f64
    /// One plane per channel.
    case s16Planar = "s16p", s32Planar = "s32p", f32Planar = "f32p"

    var raw: AVSampleFormat {
        switch self {
        case .u8: return AV_SAMPLE_FMT_U8
        case .s16: return AV_SAMPLE_FMT_S16
        case .s32: return AV_SAMPLE_FMT_S32
        case .f32: return AV_SAMPLE_FMT_FLT
        case .f64: return AV_SAMPLE_FMT_DBL
        case .s16Planar: return AV_SAMPLE_FMT_S16P
        case .s32Planar: return AV_SAMPLE_FMT_S32P
        case .f32Planar: return AV_SAMPLE_FMT_FLTP
        }
    }

    public var isPlanar: Bool { av_sample_fmt_is_planar(raw) != 0 }
    public var bytesPerSample: Int { Int(av_get_bytes_per_sample(raw)) }
}

/// One compressed sample for a passthrough input: the bytes of an encoded
/// frame or audio packet and its timing.
public struct CompressedSample: Sendable {
    public var data: [UInt8]
    public var presentationTime: MediaTime
    /// When it must be decoded; nil when it equals the presentation time.
    public var decodeTime: MediaTime?
    /// How long it is displayed or plays; nil to take it from the next sample.
    public var duration: MediaTime?
    public var isKeyframe: Bool

    public init(data: [UInt8], presentationTime: MediaTime, decodeTime: MediaTime? = nil, duration: MediaTime? = nil, isKeyframe: Bool) {
        self.data = data
        self.presentationTime = presentationTime
        self.decodeTime = decodeTime
        self.duration = duration
        self.isKeyframe = isKeyframe
    }
}
