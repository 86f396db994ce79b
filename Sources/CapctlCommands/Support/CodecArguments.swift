import ArgumentParser
import CaptureKit

/// `--video-codec`: a codec to encode to, or `copy` (the camera's MJPEG or
/// H.264 written as it comes). Any letter case.
enum VideoCodecArgument: String, ExpressibleByArgument, CaseIterable {
    case h264, hevc, vp9, av1, mjpeg, copy

    init?(argument: String) {
        self.init(rawValue: argument.lowercased())
    }

    /// How the recording settings write video.
    var encoding: RecordingSettings.VideoEncoding {
        switch self {
        case .h264: .encode(.h264)
        case .hevc: .encode(.hevc)
        case .vp9: .encode(.vp9)
        case .av1: .encode(.av1)
        case .mjpeg: .encode(.mjpeg)
        case .copy: .passthrough
        }
    }
}

/// `--audio-codec`: aac, opus, flac or a PCM layout, in any letter case
/// (`pcm` is `pcm_s16le`).
struct AudioCodecArgument: ExpressibleByArgument, CustomStringConvertible {
    let codec: AudioCodec

    init?(argument: String) {
        guard let codec = AudioCodec(name: argument) else { return nil }
        self.codec = codec
    }

    var description: String { codec.name }

    static var allValueStrings: [String] { ["aac", "opus", "flac", "pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le"] }
}

/// `--stream-preset`: the speed preset of the streams' own encoder, which is
/// always x264 or x265.
struct StreamPresetArgument: ExpressibleByArgument, CustomStringConvertible {
    let name: String

    init?(argument: String) {
        guard VideoOutputSettings.x26xPresets.contains(argument) else { return nil }
        name = argument
    }

    var description: String { name }

    static var allValueStrings: [String] { VideoOutputSettings.x26xPresets }
}

extension EncodingOptions {
    /// The codec the file's video is encoded with: the one asked for, else
    /// the container's usual one (H.264 when only streaming); nil for copy.
    func encodedVideoCodec(out: String?) -> VideoCodec? {
        switch videoCodec?.encoding ?? .automatic {
        case .encode(let codec): return codec
        case .passthrough: return nil
        case .automatic: return out.flatMap(FileType.init(path:)).map(RecordingSettings.defaultVideoCodec(for:)) ?? .h264
        }
    }

    /// Refuses a `--preset` the file's encoder does not take, naming those it
    /// does (libavcodec states them). Without an encoder for the codec, the
    /// recording refuses the codec itself.
    func validatePreset(out: String?) throws {
        guard let preset, let codec = encodedVideoCodec(out: out), let found = EncoderCatalog.presets(for: codec) else { return }
        let (encoder, presets) = found
        guard !presets.accepts(preset) else { return }
        if presets == .none {
            throw ValidationError("--preset: the \(codec.rawValue) encoder (\(encoder)) has no speed presets; leave --preset out")
        }
        throw ValidationError("--preset '\(preset)' is not a \(encoder) preset; use \(presets)")
    }
}
