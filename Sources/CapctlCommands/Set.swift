import FoundationEssentials
import ArgumentParser
import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

extension Capctl {
    /// `capctl set DEVICE name=value...`: change a camera's controls and features.
    struct SetControls: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change a camera's controls and camera features.",
            discussion: """
            Each setting is name=value. The name is a camera feature or any control 'capctl \
            controls' lists (by name or ID). Camera features:

              focus=locked|auto|continuous      auto: focus once, then lock
              lens_position=0.0-1.0             0.0 nearest, 1.0 furthest; locks focus
              focus_range=none|near|far         where automatic focus looks
              exposure=locked|auto|continuous   auto: expose once, then lock
              exposure_time=SECONDS             0.01, 1/100 or 10ms (manual exposure)
              exposure_bias=EV                  compensation, such as -1 or 0.7
              white_balance=locked|auto|continuous
              temperature=KELVIN                white balance at this temperature
              zoom=FACTOR                       1.0 is the full field of view
              low_light_boost=on|off            may lower the frame rate in low light

            Control values: numbers (decimal or 0x hex) or min, max, default; on/off for \
            switches; a menu entry's name or index. Settings are applied in the order given, \
            so 'gain_automatic=0 gain=100' works where 'gain=100' alone is refused while \
            automatic gain is on. Every setting is checked before the first is applied: an \
            unknown name, a read-only control or a value out of range changes nothing, and \
            the message gives what is allowed. Each applied setting is printed as name=value \
            with the value the camera took.

            While it sets, capctl holds the camera's configuration lock: the V4L2 priority \
            that keeps other programs from changing its controls or format, and an advisory \
            lock naming this process. With --hold it keeps the lock after setting, until \
            interrupted (Ctrl-C or SIGTERM), so the settings stay as they are; 'set --hold' \
            with no settings only holds the lock. A camera locked by another process is \
            refused with status 69, naming that process.

            --ramp RATE moves the zoom smoothly instead of jumping, at RATE powers of two per \
            second (1 doubles or halves the factor each second); Ctrl-C stops the ramp where \
            it is.

            With --json: one document with 'device', 'applied' (name, id for controls, value, \
            and valueText for menus and switches) and 'held'.
            """
        )

        @Argument(help: "The camera: a path, unique ID, or video:N.")
        var device: DeviceArgument

        @Argument(help: ArgumentHelp("Settings to apply, in order.", valueName: "name=value"))
        var assignments: [AssignmentArgument] = []

        @Option(name: .long, help: ArgumentHelp("Ramp zoom changes at this rate, in powers of two per second.", valueName: "rate"))
        var ramp: Double?

        @Flag(name: .long, help: "Keep the configuration lock until interrupted.")
        var hold = false

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if assignments.isEmpty && !hold {
                throw ValidationError("give at least one name=value setting (or --hold to only hold the configuration lock)")
            }
            if let ramp {
                guard ramp.isFinite, ramp > 0 else {
                    throw ValidationError("--ramp \(ramp) must be a rate above 0, in powers of two per second (1 doubles the zoom each second)")
                }
                guard assignments.contains(where: { $0.assignment.feature == .zoom }) else {
                    throw ValidationError("--ramp applies to zoom: add a zoom=FACTOR setting, or leave --ramp out")
                }
            }
        }

        func run() throws {
            let discovery = DeviceDiscovery()
            let camera = try device.camera(in: discovery) { CommandFailure("\($0): a virtual camera has no controls to set", status: .usage) }
            let index = discovery.devices(for: .video).firstIndex { $0.uniqueID == camera.uniqueID }
            do {
                let controls = try DeviceControls.open(camera.path)
                try controls.lockForConfiguration()
                defer { controls.unlockForConfiguration() }
                let cancellation = ControlCancellation()
                var watcher: CancellationWatcher?
                if ramp != nil {
                    watcher = try CancellationWatcher(cancellation: cancellation)
                }
                // Also when applying throws: the watching thread ends before the command does.
                defer { watcher?.finish() }
                var applied: [AppliedSetting] = []
                try controls.apply(assignments.map(\.assignment), zoomRampRate: ramp, cancellation: cancellation) { setting in
                    applied.append(setting)
                    if !output.json {
                        print("\(setting.name)=\(setting.value)" + (setting.meaning.map { $0 == setting.value.description ? "" : "  # \($0)" } ?? ""))
                        fflush(nil)
                    }
                }
                if watcher != nil && hold {
                    // From the ramp's watcher to the hold's pipe, an interrupt waits (blocked)
                    // instead of finding no handler; the pipe unblocks it.
                    try? Posix.blockSignals([SIGINT, SIGTERM])
                }
                watcher?.finish()
                if output.json {
                    try JSONOutput.printLine(SetDocument(device: DeviceJSON(camera, index: index), applied: applied.map(AppliedJSON.init), held: hold))
                }
                if hold && !cancellation.isCancelled {
                    let interrupt = try InterruptSignal.pipe()
                    defer { interrupt.close() }
                    let enforcement = controls.isLockEnforcedByDriver == false ? " (advisory only: this driver ignores V4L2 priorities)" : ""
                    StandardStream.error.write("capctl: holding the configuration lock of \(camera.path) as process \(getpid())\(enforcement); Ctrl-C to release\n")
                    _ = try? interrupt.wait()
                }
            } catch let error as ControlError {
                throw CommandFailure(error)
            }
        }
    }
}

/// A `name=value` command-line setting.
struct AssignmentArgument: ExpressibleByArgument, CustomStringConvertible {
    let assignment: ControlAssignment

    init?(argument: String) {
        guard let assignment = ControlAssignment(parsing: argument) else { return nil }
        self.assignment = assignment
    }

    var description: String { assignment.description }

    static var defaultValueDescription: String { "name=value" }
}

package struct SetDocument: Encodable {
    let device: DeviceJSON
    let applied: [AppliedJSON]
    let held: Bool

    package init(device: DeviceJSON, applied: [AppliedJSON], held: Bool) {
        self.device = device
        self.applied = applied
        self.held = held
    }
}

package struct AppliedJSON: Encodable {
    let setting: AppliedSetting

    package init(_ setting: AppliedSetting) {
        self.setting = setting
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(setting.name, forKey: .name)
        if let id = setting.controlID { try container.encode(id, forKey: .id) }
        switch setting.value {
        case .integer(let value): try container.encode(value, forKey: .value)
        case .number(let value): try container.encode(value, forKey: .value)
        case .text(let value): try container.encode(value, forKey: .value)
        case .boolean(let value): try container.encode(value, forKey: .value)
        }
        if let meaning = setting.meaning { try container.encode(meaning, forKey: .valueText) }
    }

    enum Keys: String, CodingKey { case name, id, value, valueText }
}

/// Cancels a long change (a zoom ramp) when SIGINT or SIGTERM arrives: a
/// `SignalWatcher`'s thread waits for the signals while the change runs on
/// this one.
final class CancellationWatcher {
    private let watcher: SignalWatcher

    init(cancellation: ControlCancellation) throws {
        do {
            watcher = try SignalWatcher([SIGINT, SIGTERM]) { _ in cancellation.cancel() }
        } catch {
            throw CommandFailure("cannot watch for signals: \(error)", status: .failure)
        }
    }

    /// Stops the watching thread and waits for it; the signals get back
    /// their former handling.
    func finish() {
        watcher.stop()
    }
}
