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
        if let preset = sessionPreset, let required = preset.requiredSize, let size, size.width != required.width || size.height != required.height {
            throw ValidationError("--session-preset \(preset.rawValue) and --size \(size) disagree; give one of them")
        }
        if let pixelFormat, pixelFormat.isEmpty || pixelFormat.count > 16 {
            throw ValidationError("--pixel-format '\(pixelFormat)' is not a fourcc such as YUYV or MJPG")
        }
    }

    var request: CaptureVideoRequest {
        CaptureVideoRequest(preset: sessionPreset, width: size?.width, height: size?.height, framesPerSecond: fps?.value,
                            pixelFormat: pixelFormat, useLibv4l2: libv4l2)
    }
}

/// What `record` and `serve` ask of microphones.
struct AudioCaptureOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Audio sample rate to capture at.", valueName: "hz"))
    var sampleRate: Int?

    @Option(name: .long, help: ArgumentHelp("Audio channels to capture.", valueName: "n"))
    var channels: Int?

    func validate() throws {
        if let sampleRate, !(8000...384_000).contains(sampleRate) {
            throw ValidationError("--sample-rate \(sampleRate) is out of range; use 8000 to 384000, such as 48000")
        }
        if let channels, !(1...16).contains(channels) {
            throw ValidationError("--channels \(channels) is out of range; use 1 to 16")
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

    func validate() throws {
        if let crf, !(0...63).contains(crf) {
            throw ValidationError("--crf \(crf) is out of range; use 0 to 51 for h264/hevc (23 is the default), up to 63 for vp9/av1")
        }
        if crf != nil && bitrate != nil {
            throw ValidationError("--crf and --bitrate both set the rate; give one")
        }
        if let threads, !(0...64).contains(threads) {
            throw ValidationError("--threads \(threads) is out of range; use 0 (automatic) to 64")
        }
        if videoCodec == .copy && (crf != nil || bitrate != nil || preset != nil || keyframeInterval != nil || maxrate != nil) {
            throw ValidationError("--video-codec copy writes frames as they come; --crf, --bitrate, --maxrate, --preset and --keyframe-interval need an encoder")
        }
        if bufsize != nil && maxrate == nil {
            throw ValidationError("--bufsize is the buffer of a rate cap; give --maxrate too")
        }
        if let maxrate, maxrate.bytes < 10_000 {
            throw ValidationError("--maxrate \(maxrate) is too low for video; use at least 10K, such as 4M")
        }
        if fragmentInterval != nil && (noFragments || faststart) {
            throw ValidationError("--fragment-interval and --no-fragments/--faststart contradict each other; give one")
        }
        if fragmentsOnly && (noFragments || faststart) {
            throw ValidationError("--fragments-only and --no-fragments/--faststart contradict each other; give one")
        }
    }

    /// The recording settings these options ask for.
    func settings() -> RecordingSettings {
        var settings = RecordingSettings()
        if let videoCodec { settings.video = videoCodec.encoding }
        settings.quality = crf
        settings.videoBitRate = bitrate.map { Int($0.bytes) }
        settings.encoderPreset = preset
        settings.maxBitRate = maxrate.map { Int($0.bytes) }
        settings.rateBufferSize = bufsize.map { Int($0.bytes) }
        settings.keyframeInterval = keyframeInterval?.time
        if let threads { settings.videoEncoderOptions["threads"] = String(threads) }
        settings.audioCodec = audioCodec?.codec
        settings.audioBitRate = audioBitrate.map { Int($0.bytes) }
        if noFragments || faststart {
            settings.fragmentInterval = .invalid
        } else if let fragmentInterval {
            settings.fragmentInterval = fragmentInterval.time
        }
        settings.optimizeForNetworkUse = faststart
        settings.keepsMovieFragments = fragmentsOnly
        return settings
    }
}
