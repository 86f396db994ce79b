import ArgumentParser
import CaptureKit

/// `record`'s options for publishing to media servers while recording.
struct StreamingOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Also publish to this media server (rtmp://, rtmps://, srt://, rtsp://, udp://); repeatable.", valueName: "url"))
    var stream: [String] = []

    @Option(name: .long, help: ArgumentHelp("The streams' container: flv, mpegts or rtsp (default: from the URL's scheme).", valueName: "format"))
    var streamFormat: StreamFormat?

    @Flag(name: .long, help: "Stop the recording (status 69) when a stream cannot connect or is lost, instead of retrying.")
    var streamRequired = false

    @Option(name: .long, help: ArgumentHelp("Give the streams an encoder of their own at this video bit rate, such as 2500K.", valueName: "rate"))
    var streamVideoBitrate: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("Give the streams an encoder of their own with this speed preset (ultrafast … placebo, as x264 names them).", valueName: "name"))
    var streamPreset: StreamPresetArgument?

    @Option(name: .long, help: ArgumentHelp("The streams' audio bit rate (default 128K).", valueName: "rate"))
    var streamAudioBitrate: ByteCountArgument?

    @Option(name: .long, help: ArgumentHelp("At most this long between the streams' keyframes (default 2s).", valueName: "time"))
    var streamKeyframeInterval: DurationArgument?

    @Option(name: .long, help: ArgumentHelp("How long connecting, or one write, may take before a stream counts as lost (default 5s).", valueName: "time"))
    var streamTimeout: DurationArgument?

    /// The destinations, checked in form only: scheme, host and port. No
    /// name is looked up here: a host that does not resolve is a stream that
    /// cannot connect, reported (and retried) while recording.
    func destinations() throws -> [StreamDestination] {
        var destinations: [StreamDestination] = []
        for url in stream {
            do throws(StreamDestinationError) {
                destinations.append(try StreamDestination(url, format: streamFormat))
            } catch {
                throw ValidationError("--stream \(StreamDestination.redacted(url)): \(error.description)")
            }
        }
        return destinations
    }

    func validate() throws {
        let given = !stream.isEmpty
        if !given {
            let named = [(streamFormat != nil, "--stream-format"), (streamRequired, "--stream-required"),
                         (streamVideoBitrate != nil, "--stream-video-bitrate"), (streamPreset != nil, "--stream-preset"),
                         (streamAudioBitrate != nil, "--stream-audio-bitrate"), (streamKeyframeInterval != nil, "--stream-keyframe-interval"),
                         (streamTimeout != nil, "--stream-timeout")].filter(\.0).map(\.1)
            if let first = named.first { throw ValidationError("\(first) applies to streams; add --stream URL") }
            return
        }
        if let rate = streamVideoBitrate, rate.bytes < 10_000 {
            throw ValidationError("--stream-video-bitrate \(rate) is too low for video; use at least 10K, such as 2500K")
        }
        if let interval = streamKeyframeInterval, !(interval.time.seconds > 0) {
            throw ValidationError("--stream-keyframe-interval must be longer than 0, such as 2s")
        }
        if let rate = streamAudioBitrate, rate.bytes < 8_000 {
            throw ValidationError("--stream-audio-bitrate \(rate) is too low; use at least 8K, such as 128K")
        }
        if let timeout = streamTimeout, timeout.time.seconds < 0.1 {
            throw ValidationError("--stream-timeout \(timeout) is too short; use at least 100ms, such as 5s")
        }
        // Checked once, before any device or file is opened (ArgumentParser validates the group).
        _ = try destinations()
    }

    /// The streams' encoding: the file's (so that one encoder feeds both),
    /// unless a --stream- option asks for its own, or the file's video cannot
    /// be streamed (copied camera frames, a codec the container cannot carry).
    func settings(from file: RecordingSettings, fileType: FileType?, format: StreamFormat) -> RecordingSettings {
        var settings = file
        settings.realTime = true
        let codec: VideoCodec? = switch file.video {
        case .encode(let chosen): chosen
        case .automatic: fileType.map(RecordingSettings.defaultVideoCodec(for:)) ?? .h264
        case .passthrough: nil
        }
        let streamable = codec.map { format.videoCodecs.contains($0 == .hevc ? "hevc" : $0.rawValue) } ?? false
        if !streamable {
            settings.video = .encode(.h264)
            settings.quality = nil
            settings.videoBitRate = nil
            settings.encoderPreset = nil
            settings.videoEncoderOptions = file.videoEncoderOptions.filter { $0.key == "threads" }
        }
        if let rate = streamVideoBitrate {
            settings.videoBitRate = Int(rate.bytes)
            settings.quality = nil
            // A stream given a rate keeps to it: the rate is also its cap, over two seconds.
            settings.maxBitRate = Int(rate.bytes)
            settings.rateBufferSize = nil
        }
        if let streamPreset { settings.encoderPreset = streamPreset.name }
        settings.audioCodec = .aac
        settings.audioBitRate = streamAudioBitrate.map { Int($0.bytes) } ?? 128_000
        return settings
    }
}

extension StreamFormat: ExpressibleByArgument {}
