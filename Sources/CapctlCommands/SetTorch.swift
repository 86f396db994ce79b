import ArgumentParser
import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

extension Capctl {
    /// `capctl set-torch on|off`: a camera's torch.
    struct SetTorch: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-torch",
            abstract: "Turn a camera's torch on or off, or show its state.",
            discussion: """
            The torch is found, in order: V4L2 flash controls on the camera's node; a flash \
            sub-device in the camera's media-controller graph; an LED class device whose name \
            ends in :torch or :flash (/sys/class/leds). Without --device, the first camera with \
            flash controls is used, else the first such LED. --led drives any LED class device \
            by name (brightness out of max_brightness), such as input0::capslock.

            --level is a fraction of the torch's full output, above 0 and at most 1.0, or max \
            for the most that is available now. The light may offer less than its full output \
            for a while (the hardware reports a fault such as overheating): a level above what \
            is currently available is not set, the torch is left as it was, and capctl exits \
            with status 75 (try again later, or use --level max). A level outside 0.0-1.0 is a \
            usage error (64); a camera without a torch gives status 69.

            Writing an LED's sysfs files usually needs root: when permission is denied (77) \
            the message names the file and how to grant access (a group, a udev rule).

            --status prints the torch's state: its source, whether it has a torch and a flash, \
            whether it is on, its level, whether it is available and the highest level \
            available now, and any faults. With --json, on, off and --status print one \
            document with those fields (source, sourceKind, hasTorch, hasFlash, active, level, \
            available, maxAvailableLevel, faults).
            """
        )

        @Argument(help: ArgumentHelp("on or off.", valueName: "on|off"))
        var state: TorchState?

        // Unconditional: a negative level ("-0.5") is a value to refuse with its own message, not an unknown option.
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Torch level: a fraction above 0 up to 1.0, or max (default: max).", valueName: "level"))
        var level: TorchLevelArgument?

        @Option(name: .long, help: ArgumentHelp("The camera whose torch to use: a path, unique ID, or video:N.", valueName: "device"))
        var device: DeviceArgument?

        @Option(name: .long, help: ArgumentHelp("Drive this LED class device instead (a name under /sys/class/leds).", valueName: "name"))
        var led: String?

        @Flag(name: .long, help: "Show the torch's state instead of changing it.")
        var status = false

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if status {
                if let state { throw ValidationError("--status shows the torch's state; leave out '\(state.rawValue)', or drop --status to turn it \(state.rawValue)") }
                if level != nil { throw ValidationError("--level applies when turning the torch on, not with --status") }
            } else if state == nil {
                throw ValidationError("say 'on' or 'off' (or --status to show the torch's state)")
            }
            if device != nil && led != nil {
                throw ValidationError("give --device or --led, not both: --led drives an LED class device directly")
            }
            if let level {
                if state == .off { throw ValidationError("--level applies to 'on'; 'off' turns the torch off") }
                if case .level(let value) = level.level, !(value > 0 && value <= 1) {
                    throw ValidationError(value == 0
                        ? "--level 0 turns nothing on; use 'off' to turn the torch off"
                        : "--level \(level.text) is outside 0.0-1.0; give a fraction of full output (such as 0.5), or max")
                }
            }
        }

        func run() throws {
            do {
                let torch = try findTorch()
                if status {
                    try print(torch.status())
                    return
                }
                try torch.lockForConfiguration()
                defer { torch.unlockForConfiguration() }
                switch state {
                case .on?:
                    try torch.setTorchModeOn(level: level?.level ?? .maximumAvailable)
                case .off?, nil:
                    try torch.setTorchMode(.off)
                }
                try print(torch.status())
            } catch let error as TorchError {
                throw CommandFailure(error)
            }
        }

        private func findTorch() throws -> Torch {
            let torches = TorchDiscovery()
            if let led {
                return try torches.torch(led: led)
            }
            let discovery = DeviceDiscovery()
            if let device {
                let camera = try device.camera(in: discovery) { CommandFailure("\($0): a virtual camera has no torch", status: .unavailable) }
                return try torches.torch(forDevice: camera.path)
            }
            let cameras = discovery.devices(for: .video).filter { if case .authorized = $0.access { return true } else { return false } }
            return try torches.defaultTorch(cameras: cameras.map(\.path))
        }

        private func print(_ status: TorchStatus) throws {
            if output.json {
                try JSONOutput.printLine(TorchStatusJSON(status))
                return
            }
            var line = "torch \(status.isTorchActive ? "on" : "off")"
            if status.isTorchActive { line += " at level \(ControlsText.number(status.torchLevel))" }
            line += "  (\(status.source))"
            Swift.print(line)
            var facts = ["torch \(status.hasTorch ? "yes" : "no")", "flash \(status.hasFlash ? "yes" : "no")"]
            facts.append(status.isTorchAvailable ? "available up to \(ControlsText.number(status.maxAvailableTorchLevel))" : "unavailable now")
            if !status.faults.isEmpty { facts.append("faults: \(status.faults.joined(separator: ", "))") }
            Swift.print("    " + facts.joined(separator: ", "))
        }
    }
}

enum TorchState: String, ExpressibleByArgument, CaseIterable {
    case on, off
}

/// `--level`: a number or `max`; the range is checked in validate() so the
/// message can say what to give instead.
struct TorchLevelArgument: ExpressibleByArgument {
    let level: TorchLevel
    let text: String

    init?(argument: String) {
        text = argument
        if argument.lowercased() == "max" {
            level = .maximumAvailable
        } else if let value = Double(argument), value.isFinite {
            level = .level(value)
        } else {
            return nil
        }
    }

    static var defaultValueDescription: String { "0.0-1.0|max" }
}

package struct TorchStatusJSON: Encodable {
    let source: String
    let sourceKind: String
    let hasTorch: Bool
    let hasFlash: Bool
    let active: Bool
    let level: Double
    let available: Bool
    let maxAvailableLevel: Double
    let faults: [String]

    package init(_ status: TorchStatus) {
        switch status.source {
        case .v4l2(let path, let isSubdevice):
            source = path
            sourceKind = isSubdevice ? "v4l2-subdevice" : "v4l2"
        case .led(let name, _):
            source = name
            sourceKind = "led"
        }
        hasTorch = status.hasTorch
        hasFlash = status.hasFlash
        active = status.isTorchActive
        level = status.torchLevel
        available = status.isTorchAvailable
        maxAvailableLevel = status.maxAvailableTorchLevel
        faults = status.faults
    }
}

extension CommandFailure {
    /// The status and message for a torch error.
    init(_ error: TorchError) {
        switch error {
        case .noTorch: self.init(error.description, status: .unavailable)
        case .noLightFound: self.init(error.description + "; any LED can be driven with --led NAME", status: .unavailable)
        case .noSuchLED: self.init(error.description, status: .noInput)
        case .levelOutOfRange, .modeNotSupported: self.init(error.description, status: .usage)
        case .levelUnavailable: self.init(error.description, status: .temporaryFailure)
        case .permissionDenied: self.init(error.description, status: .noPermission)
        case .busy: self.init(error.description, status: .unavailable)
        case .control(let controlError): self.init(controlError)
        case .io: self.init(error.description, status: .ioError)
        }
    }
}
