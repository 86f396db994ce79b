import ArgumentParser
import CaptureKit

extension Capctl {
    /// `capctl list-devices`: every camera and microphone this system has.
    struct ListDevices: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list-devices",
            abstract: "List cameras and microphones.",
            discussion: """
            Cameras are the V4L2 nodes that capture video (output, metadata and other nodes \
            are left out); microphones are the ALSA PCM devices with a capture stream, plus \
            ALSA's 'default'. For each device: its path, a unique ID that stays the same across \
            replugging and reboots (the /dev/v4l/by-id name where udev made one, else derived \
            from bus and card), name, media type, driver, bus, USB model ID, position, whether \
            it has a torch or a flash, and whether this user may open it (and if not, why).

            The index printed before each device is what video:N and audio:N refer to.

            After the hardware come the virtual devices, made in software for trying capctl \
            without a camera or microphone, for tests and for benchmarks: test-pattern (moving \
            colour bars with a frame counter) and test-tone (a 440 Hz sine at -6 dBFS; \
            test-tone:HZ for another frequency, ,level=DBFS for another level or level=silence, \
            ,delay=TIME for silence first). They are marked virtual, have no index, and are named by what \
            is printed as their path. file:PATH, a camera that replays a video file, is not listed.
            """
        )

        @Option(name: .long, help: "List only devices of this kind: video or audio.")
        var type: MediaType?

        @OptionGroup var output: OutputOptions

        func run() throws {
            let devices = DeviceDiscovery().devices(for: type)
            let indexed = Self.indexed(devices)
            let virtual = Self.virtualDevices(for: type)
            if output.json {
                try JSONOutput.printLine(["devices": indexed.map { DeviceJSON($0.device, index: $0.index) } + virtual.map { DeviceJSON($0) }])
                return
            }
            if devices.isEmpty {
                Diagnostics.warning("no \(type.map { $0 == .video ? "cameras" : "microphones" } ?? "capture devices") found")
            }
            for (device, index) in indexed {
                print(Self.text(for: device, index: index))
            }
            for device in virtual {
                print(Self.text(for: device))
            }
        }

        /// The listed virtual devices of a kind (all kinds for nil).
        static func virtualDevices(for type: MediaType?) -> [VirtualDevice] {
            VirtualDevice.listed.filter { type == nil || $0.mediaType == type }
        }

        /// Each device with its index among devices of its kind.
        static func indexed(_ devices: [CaptureDevice]) -> [(device: CaptureDevice, index: Int)] {
            var counts: [MediaType: Int] = [:]
            return devices.map { device in
                let index = counts[device.mediaType, default: 0]
                counts[device.mediaType] = index + 1
                return (device, index)
            }
        }

        static func text(for device: CaptureDevice, index: Int) -> String {
            var lines = ["\(device.mediaType.rawValue):\(index)  \(device.localizedName)  \(device.path)"]
            lines.append("    unique ID  \(device.uniqueID)")
            var details = [String]()
            if !device.driver.isEmpty { details.append("driver \(device.driver)") }
            if !device.bus.isEmpty { details.append("bus \(device.bus)") }
            if let model = device.modelID { details.append("model \(model)") }
            if device.mediaType == .video {
                details.append("position \(device.position.rawValue)")
                details.append("torch \(device.hasTorch ? "yes" : "no")")
                details.append("flash \(device.hasFlash ? "yes" : "no")")
            }
            if !details.isEmpty { lines.append("    " + details.joined(separator: ", ")) }
            switch device.access {
            case .authorized: lines.append("    access     authorized")
            case .denied(let reason): lines.append("    access     denied: \(reason)")
            }
            return lines.joined(separator: "\n")
        }

        static func text(for device: VirtualDevice) -> String {
            ["\(device.mediaType.rawValue) (virtual)  \(device.localizedName)  \(device.specifier)",
             "    unique ID  \(device.uniqueID)",
             "    access     authorized"].joined(separator: "\n")
        }
    }
}
