import ArgumentParser
import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// How progress is shown.
package enum ProgressStyle: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// The capture options `record` and `snap` share: what the camera is asked for.
struct VideoCaptureOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Size and rate by name: high, medium, low, 640x480, 1280x720, 1920x1080, 3840x2160, photo.", valueName: "preset"))
    var sessionPreset: SessionPreset?

    @Option(name: .long, help: ArgumentHelp("Frame size, each side up to 16384.", valueName: "WxH"))
    var size: FrameSizeArgument?

    @Option(name: .long, help: ArgumentHelp("Frames per second.", valueName: "rate"))
    var fps: RateArgument?

    @Option(name: .long, help: ArgumentHelp("The camera's pixel format, by fourcc as formats prints it (YUYV, MJPG, NV12, 'Y16 -BE' …).", valueName: "fourcc"))
    var pixelFormat: String?

    @Flag(name: .long, help: "Open the camera through libv4l2 (its format conversions become available).")
    var libv4l2 = false

    @Flag(name: .long, help: "Play file: inputs as fast as possible instead of in real time.")
    var noRealtime = false

    func validate() throws {
        do throws(SettingError) {
            try RecordingOptions.validateCapture(sessionPreset: sessionPreset, size: size, pixelFormat: pixelFormat)
        } catch {
            throw ValidationError(error.message(.commandLine))
        }
    }

    var request: CaptureVideoRequest {
        RecordingOptions.videoRequest(preset: sessionPreset, size: size, fps: fps, pixelFormat: pixelFormat, libv4l2: libv4l2)
    }
}

/// What `record` and `serve` ask of microphones.
struct AudioCaptureOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Audio sample rate to capture at.", valueName: "hz"))
    var sampleRate: Int?

    @Option(name: .long, help: ArgumentHelp("Audio channels to capture.", valueName: "n"))
    var channels: Int?

    func validate() throws {
        do throws(SettingError) {
            try RecordingOptions.validateAudioCapture(sampleRate: sampleRate, channels: channels)
        } catch {
            throw ValidationError(error.message(.commandLine))
        }
    }

    var request: CaptureAudioRequest { CaptureAudioRequest(sampleRate: sampleRate, channels: channels) }
}

/// How `record` encodes.
struct EncodingOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("h264, hevc, vp9, av1, mjpeg, or copy (write the camera's MJPEG or H.264 as it comes).", valueName: "codec"))
    var videoCodec: VideoCodecArgument?

    @Option(name: .long, help: ArgumentHelp("Constant quality (lower is better; x264 default 23).", valueName: "n"))
    var crf: Int?

    @Option(name: .long, help: ArgumentHelp("Video bit rate, such as 4M.", valueName: "rate"))
    var bitrate: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("Encoder speed preset: ultrafast … veryslow for h264 and hevc, a speed level for vp9 and av1 (the range the encoder states).", valueName: "name"))
    var preset: String?

    @Option(name: .long, help: ArgumentHelp("Cap the video bit rate at this, such as 4M (for links of constant rate).", valueName: "rate"))
    var maxrate: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("The rate cap's buffer in bits, such as 8M (default: two seconds at --maxrate).", valueName: "size"))
    var bufsize: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("At most this long between keyframes.", valueName: "time"))
    var keyframeInterval: DurationArgument?

    @Option(name: .long, help: ArgumentHelp("Encoder threads (0: automatic).", valueName: "n"))
    var threads: Int?

    @Option(name: .long, help: ArgumentHelp("aac, opus, flac, pcm_s16le, pcm_s24le, pcm_s32le or pcm_f32le.", valueName: "codec"))
    var audioCodec: AudioCodecArgument?

    @Option(name: .long, help: ArgumentHelp("Audio bit rate, such as 128K.", valueName: "rate"))
    var audioBitrate: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("Length of MP4/MOV fragments (default 1s).", valueName: "time"))
    var fragmentInterval: DurationArgument?

    @Flag(name: .long, help: "Write MP4/MOV as one classic file, playable only once finalized.")
    var noFragments = false

    @Flag(name: .long, help: "Put the index first (for the web); implies --no-fragments.")
    var faststart = false

    @Flag(name: .long, help: "Keep finished MP4/MOV files fragmented (for Media Source Extensions) instead of making them regular.")
    var fragmentsOnly = false
}
