import ArgumentParser
import CaptureKit

extension Capctl {
    /// `capctl formats DEVICE`: what a camera or microphone can capture.
    struct Formats: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the formats, frame sizes and frame rates a device offers.",
            discussion: """
            For a camera: every pixel format (fourcc, description, whether it is compressed \
            or emulated), every frame size, and every frame interval for each size, shown as \
            frames per second and as the time per frame. Stepwise and continuous ranges are \
            shown as ranges, with the intervals the driver gives for their largest size. The \
            camera's active format comes first.

            For a microphone: each sample format the hardware accepts, with its range of \
            sample rates, the common rates within it, and the range of channel counts.

            With --json, sizes are objects with width, height and intervals; ranges carry \
            type, min, max and step objects instead.
            """
        )

        @Argument(help: "The device: a path, unique ID, ALSA name, or video:N / audio:N.")
        var device: DeviceArgument

        @Flag(name: .customLong("libv4l2"), help: "Also list the formats libv4l2 can convert to (marked emulated).")
        var includeConversions = false

        @OptionGroup var output: OutputOptions

        func run() throws {
            let discovery = DeviceDiscovery()
            let captureDevice = try device.resolve(in: discovery)
            let index = discovery.devices(for: captureDevice.mediaType).firstIndex { $0.uniqueID == captureDevice.uniqueID }
            switch captureDevice.mediaType {
            case .video:
                let formats = try captureDevice.videoFormats(includingConversions: includeConversions)
                let active = try? captureDevice.activeVideoFormat()
                if output.json {
                    try JSONOutput.printLine(VideoFormatsDocument(
                        device: DeviceJSON(captureDevice, index: index), active: active.map(ActiveFormatJSON.init),
                        formats: formats.map(VideoFormatJSON.init)))
                } else {
                    print(FormatText.video(device: captureDevice, active: active, formats: formats))
                }
            case .audio:
                if includeConversions {
                    throw CommandFailure("--libv4l2 applies to cameras; \(captureDevice.path) is a microphone", status: .usage)
                }
                let formats = try captureDevice.audioFormats()
                if output.json {
                    try JSONOutput.printLine(AudioFormatsDocument(
                        device: DeviceJSON(captureDevice, index: index), formats: formats.map(AudioFormatJSON.init)))
                } else {
                    print(FormatText.audio(device: captureDevice, formats: formats))
                }
            }
        }
    }
}
