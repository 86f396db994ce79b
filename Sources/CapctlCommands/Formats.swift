import ArgumentParser
import CaptureKit

extension Capctl {
    /// `capctl formats DEVICE`: what a camera or microphone can capture.
    struct Formats: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "formats",
            abstract: "Show the formats, frame sizes and frame rates a device offers.",
            discussion: """
            For a camera: every pixel format (fourcc, description, whether it is compressed \
            or emulated), every frame size, and every frame interval for each size, shown as \
            frames per second and as the time per frame. Stepwise and continuous ranges are \
            shown as ranges, with the intervals the driver gives for their largest size. The \
            camera's active format comes first.

            For a microphone: each sample format the hardware accepts, with its range of \
            sample rates, the common rates within it, and the range of channel counts.

            For a virtual device: test-pattern lists the pixel formats it draws (by fourcc, \
            with the libavutil name --pixel-format also takes), the range of sizes and rates it \
            draws them at, and what it delivers when nothing is asked; test-tone its sample \
            format, rates and channels; file:PATH the format, size and rate of the file's video, \
            as it is delivered (MJPEG, H.264 and HEVC compressed, as stored).

            With --json, sizes are objects with width, height and intervals; ranges carry \
            type, min, max and step objects instead.
            """
        )

        @Argument(help: "The device: a path, unique ID, ALSA name, video:N / audio:N, or test-pattern, test-tone[:HZ], file:PATH.")
        var device: DeviceArgument

        @Flag(name: .customLong("libv4l2"), help: "Also list the formats libv4l2 can convert to (marked emulated).")
        var includeConversions = false

        @OptionGroup var output: OutputOptions

        func run() throws {
            let discovery = DeviceDiscovery()
            let named = try device.named(in: discovery)
            if includeConversions, named.mediaType == .audio {
                throw CommandFailure("--libv4l2 applies to cameras; \(device) is a microphone", status: .usage)
            }
            let json = output.json ? DeviceJSON(named, in: discovery) : nil
            switch named.mediaType {
            case .video:
                let formats: [VideoFormat], active: ActiveVideoFormat?
                switch named {
                case .hardware(let camera):
                    formats = try camera.videoFormats(includingConversions: includeConversions)
                    active = try? camera.activeVideoFormat()
                case .virtual(let camera):
                    if includeConversions {
                        throw CommandFailure("--libv4l2 applies to V4L2 cameras; \(device) is a virtual camera", status: .usage)
                    }
                    do {
                        formats = try camera.videoFormats()
                        active = try camera.activeVideoFormat()
                    } catch { throw CommandFailure(error) }
                }
                if let json {
                    try JSONOutput.printLine(VideoFormatsDocument(
                        device: json, active: active.map(ActiveFormatJSON.init), formats: formats.map(VideoFormatJSON.init)))
                } else {
                    print(FormatText.video(device: named, active: active, formats: formats))
                }
            case .audio:
                let formats: [AudioFormat]
                switch named {
                case .hardware(let microphone): formats = try microphone.audioFormats()
                case .virtual(let microphone):
                    do { formats = try microphone.audioFormats() } catch { throw CommandFailure(error) }
                }
                if let json {
                    try JSONOutput.printLine(AudioFormatsDocument(device: json, formats: formats.map(AudioFormatJSON.init)))
                } else {
                    print(FormatText.audio(device: named, formats: formats))
                }
            }
        }
    }
}
