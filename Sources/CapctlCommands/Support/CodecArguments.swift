import ArgumentParser
import CaptureKit

/// `--video-codec`: a codec to encode to, or `copy` (the camera's MJPEG or
/// H.264 written as it comes). Any letter case.
package enum VideoCodecArgument: String, ExpressibleByArgument, CaseIterable {
    case h264, hevc, vp9, av1, mjpeg, copy

    package init?(argument: String) {
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
package struct AudioCodecArgument: ExpressibleByArgument, CustomStringConvertible {
    let codec: AudioCodec

    package init?(argument: String) {
        guard let codec = AudioCodec(name: argument) else { return nil }
        self.codec = codec
    }

    package var description: String { codec.name }

    package static var allValueStrings: [String] { ["aac", "opus", "flac", "pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le"] }
}

/// `--stream-preset`: the speed preset of the streams' own encoder, which is
/// always x264 or x265.
package struct StreamPresetArgument: ExpressibleByArgument, CustomStringConvertible {
    let name: String

    package init?(argument: String) {
        guard VideoOutputSettings.x26xPresets.contains(argument) else { return nil }
        name = argument
    }

    package var description: String { name }

    package static var allValueStrings: [String] { VideoOutputSettings.x26xPresets }
}
