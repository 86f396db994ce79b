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
}

extension StreamFormat: ExpressibleByArgument {}
