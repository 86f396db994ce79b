import ArgumentParser
import CaptureKit
import FoundationEssentials

extension Capctl {
    /// `capctl controls DEVICE [NAME...]`: a camera's controls and what they are set to.
    struct Controls: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "controls",
            abstract: "Show a camera's controls, their ranges and current values, and its camera features.",
            discussion: """
            Without names: every V4L2 control the camera has, grouped by class (User Controls, \
            Camera Controls, Flash Controls …), each with its name, ID, type, range, step, \
            default, current value and flags, and the entries of menu controls; then the camera \
            features built on them: the focus, exposure and white balance modes the camera \
            supports (locked, auto, continuous) and the one it is in, lens position, focus range, \
            exposure time and bias, white balance temperature, zoom factor and its maximum, and \
            low-light boost.

            With names (or IDs, such as 0x00980900): only those controls, one 'name=value' line \
            each, in the form 'capctl set' accepts.

            Names are the driver's labels written as v4l2-ctl writes them: lower case, words \
            joined by underscores ('Gain, Automatic' is gain_automatic). Flags: inactive (an \
            automatic mode overrides it now), read-only, volatile (it changes by itself), \
            grabbed (in use), write-only, and others.

            With --json: one document with 'device', 'classes' (each with id, name and controls) \
            and 'features'; with names, 'device' and 'controls'. A control has name, label, id, \
            type, minimum, maximum, step, default, value (null when it cannot be read), \
            valueText (menu entry or on/off, else null), flags and menu (index, name and, for \
            integer menus, value).
            """
        )

        @Argument(help: "The camera: a path, unique ID, video:N, or a virtual camera (which has no controls).")
        var device: DeviceArgument

        @Argument(help: "Show only these controls (names or IDs).")
        var names: [String] = []

        @OptionGroup var output: OutputOptions

        func run() throws {
            let discovery = DeviceDiscovery()
            let named = try device.named(in: discovery, expecting: .video)
            guard case .hardware(let camera) = named else {
                // A virtual camera has no controls: shown like a camera without
                // any, once it is known to be there (a file that opens).
                if case .virtual(let virtual) = named {
                    do { _ = try virtual.activeVideoFormat() } catch { throw CommandFailure(error) }
                }
                if let name = names.first {
                    throw CommandFailure("\(device): no control named '\(name)'; a virtual camera has no controls", status: .usage)
                }
                try show(named, classes: [], features: FeaturesJSON(nil), discovery: discovery)
                return
            }
            do {
                let controls = try DeviceControls.open(camera.path)
                if !names.isEmpty {
                    var chosen: [DeviceControl] = []
                    for name in names {
                        chosen.append(try controls.control(named: name))
                    }
                    if output.json {
                        try JSONOutput.printLine(SelectedControlsDocument(device: DeviceJSON(named, in: discovery), controls: chosen.map(ControlJSON.init)))
                    } else {
                        for control in chosen {
                            print("\(control.name)=\(control.value?.description ?? "")" + (control.valueText.map { text in text == control.value?.description ? "" : "  # \(text)" } ?? ""))
                        }
                    }
                    return
                }
                try show(named, classes: try controls.controlClasses(), features: FeaturesJSON(controls), discovery: discovery)
            } catch let error as ControlError {
                throw CommandFailure(error)
            }
        }

        /// Every control class and the camera features, as text or one JSON document.
        private func show(_ device: NamedDevice, classes: [ControlClassGroup], features: FeaturesJSON, discovery: DeviceDiscovery) throws {
            if output.json {
                try JSONOutput.printLine(ControlsDocument(device: device, classes: classes, features: features, discovery: discovery))
            } else {
                print(ControlsText.render(device: device, classes: classes, features: features))
            }
        }
    }
}

extension CommandFailure {
    /// The status and message for a control error: what the user asked for
    /// is wrong (64), the device is locked or busy (69), or it failed (74).
    init(_ error: ControlError) {
        switch error {
        case .unknownControl, .invalidValue, .outOfRange, .readOnly, .inactive, .notSupported:
            self.init(error.description, status: .usage)
        case .notLockedForConfiguration:
            self.init(error.description, status: .software)
        case .locked:
            self.init(error.description, status: .unavailable)
        case .device(let deviceError):
            self.init(deviceError)
        case .requestFailed(_, _, let callError):
            switch callError.errno {
            case 16: self.init(error.description, status: .unavailable) // EBUSY
            case 19, 6: self.init(error.description, status: .unavailable) // ENODEV, ENXIO: the device went away
            case 22, 34: self.init(error.description, status: .usage) // EINVAL, ERANGE: the driver refused the value
            case 13, 1: self.init(error.description, status: .noPermission) // EACCES, EPERM
            default: self.init(error.description, status: .ioError)
            }
        }
    }
}

// MARK: JSON

package struct ControlsDocument: Encodable {
    let device: DeviceJSON
    let classes: [ControlClassJSON]
    let features: FeaturesJSON

    /// The document of a device's control classes and features (`capctl serve` answers it too).
    package init(device: NamedDevice, classes: [ControlClassGroup], features: FeaturesJSON, discovery: DeviceDiscovery) {
        self.device = DeviceJSON(device, in: discovery)
        self.classes = classes.map { ControlClassJSON(id: $0.id, name: $0.name, controls: $0.controls.map(ControlJSON.init)) }
        self.features = features
    }
}

struct SelectedControlsDocument: Encodable {
    let device: DeviceJSON
    let controls: [ControlJSON]
}

struct ControlClassJSON: Encodable {
    let id: UInt32
    let name: String
    let controls: [ControlJSON]
}

struct MenuItemJSON: Encodable {
    let index: Int64
    let name: String
    let value: Int64?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(index, forKey: .index)
        try container.encode(name, forKey: .name)
        if let value { try container.encode(value, forKey: .value) }
    }

    enum Keys: String, CodingKey { case index, name, value }
}

/// A control as `controls --json` prints it.
struct ControlJSON: Encodable {
    let control: DeviceControl

    init(_ control: DeviceControl) {
        self.control = control
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(control.name, forKey: .name)
        try container.encode(control.label, forKey: .label)
        try container.encode(control.id, forKey: .id)
        try container.encode(control.type?.name ?? "type-\(control.rawType)", forKey: .type)
        try container.encode(control.minimum, forKey: .minimum)
        try container.encode(control.maximum, forKey: .maximum)
        try container.encode(control.step, forKey: .step)
        try container.encode(control.defaultValue, forKey: .default)
        switch control.value {
        case .integer(let number)?: try container.encode(number, forKey: .value)
        case .string(let text)?: try container.encode(text, forKey: .value)
        case nil: try container.encodeNil(forKey: .value)
        }
        let text: String? = control.type == .menu || control.type == .integerMenu || control.type == .boolean ? control.valueText : nil
        try container.encode(text, forKey: .valueText)
        try container.encode(control.flags.names, forKey: .flags)
        try container.encode(control.menu.map { MenuItemJSON(index: $0.index, name: $0.name, value: $0.integerValue) }, forKey: .menu)
    }

    enum Keys: String, CodingKey { case name, label, id, type, minimum, maximum, step, `default`, value, valueText, flags, menu }
}

/// The camera features: supported modes and present state.
package struct FeaturesJSON: Encodable {
    struct Focus: Encodable {
        let modes: [String]
        let mode: String?
        let lensPosition: Double?
        let ranges: [String]
        let range: String?
        let adjusting: Bool
    }

    struct Exposure: Encodable {
        let modes: [String]
        let mode: String?
        let duration: Double?
        let minDuration: Double?
        let maxDuration: Double?
        let biasValues: [Double]
        let bias: Double?
    }

    struct WhiteBalance: Encodable {
        let modes: [String]
        let mode: String?
        let temperature: Int64?
    }

    struct Zoom: Encodable {
        let supported: Bool
        let factor: Double?
        let maxFactor: Double?
    }

    struct LowLightBoost: Encodable {
        let supported: Bool
        let enabled: Bool?
    }

    let focus: Focus
    let exposure: Exposure
    let whiteBalance: WhiteBalance
    let zoom: Zoom
    let lowLightBoost: LowLightBoost

    /// The features of a camera's controls; nil: a camera without controls, which has none.
    package init(_ controls: DeviceControls?) {
        guard let controls else {
            focus = Focus(modes: [], mode: nil, lensPosition: nil, ranges: [], range: nil, adjusting: false)
            exposure = Exposure(modes: [], mode: nil, duration: nil, minDuration: nil, maxDuration: nil, biasValues: [], bias: nil)
            whiteBalance = WhiteBalance(modes: [], mode: nil, temperature: nil)
            zoom = Zoom(supported: false, factor: nil, maxFactor: nil)
            lowLightBoost = LowLightBoost(supported: false, enabled: nil)
            return
        }
        focus = Focus(
            modes: FocusMode.allCases.filter(controls.isFocusModeSupported).map(\.rawValue),
            mode: ((try? controls.focusMode()) ?? nil)?.rawValue,
            lensPosition: (try? controls.lensPosition()) ?? nil,
            ranges: controls.isAutoFocusRangeRestrictionSupported
                ? AutoFocusRangeRestriction.allCases.filter(controls.isAutoFocusRangeRestrictionSupported).map(\.rawValue) : [],
            range: controls.isAutoFocusRangeRestrictionSupported ? (try? controls.autoFocusRangeRestriction())?.rawValue : nil,
            adjusting: controls.isAdjustingFocus())
        let range = (try? controls.exposureDurationRange()) ?? nil
        exposure = Exposure(
            modes: ExposureMode.allCases.filter(controls.isExposureModeSupported).map(\.rawValue),
            mode: ((try? controls.exposureMode()) ?? nil)?.rawValue,
            duration: (try? controls.exposureDuration()) ?? nil,
            minDuration: range?.lowerBound, maxDuration: range?.upperBound,
            biasValues: controls.exposureTargetBiasValues(),
            bias: (try? controls.exposureTargetBias()) ?? nil)
        whiteBalance = WhiteBalance(
            modes: WhiteBalanceMode.allCases.filter(controls.isWhiteBalanceModeSupported).map(\.rawValue),
            mode: ((try? controls.whiteBalanceMode()) ?? nil)?.rawValue,
            temperature: (try? controls.whiteBalanceTemperature()) ?? nil)
        zoom = Zoom(supported: controls.isZoomSupported,
                    factor: (try? controls.videoZoomFactor()) ?? nil,
                    maxFactor: (try? controls.videoMaxZoomFactor()) ?? nil)
        lowLightBoost = LowLightBoost(supported: controls.isLowLightBoostSupported,
                                      enabled: (try? controls.automaticallyEnablesLowLightBoostWhenAvailable()) ?? nil)
    }
}

// MARK: Text

enum ControlsText {
    static func render(device: NamedDevice, classes: [ControlClassGroup], features: FeaturesJSON) -> String {
        var lines = [FormatText.title(device)]
        if classes.isEmpty { lines.append(contentsOf: ["", "no controls"]) }
        let width = min(max(classes.flatMap(\.controls).map(\.name.count).max() ?? 0, 10), 40)
        for group in classes {
            lines.append("")
            lines.append(group.name)
            for control in group.controls {
                lines.append(line(control, width: width))
                for item in control.menu {
                    lines.append(String(repeating: " ", count: width + 6) + "\(item.index): \(item.name)")
                }
            }
        }
        lines.append("")
        lines.append("Camera features")
        lines.append(contentsOf: featureLines(features))
        return lines.joined(separator: "\n")
    }

    /// `  brightness      0x00980900 (int)    : min=0 max=255 step=1 default=128 value=128 flags=slider`
    static func line(_ control: DeviceControl, width: Int) -> String {
        let type = "(\(control.type?.name ?? "type \(control.rawType)"))".padding(10)
        var facts: [String] = []
        switch control.type {
        case .boolean?:
            facts.append("default=\(control.defaultValue)")
        case .button?:
            break
        case .menu?, .integerMenu?:
            facts.append("min=\(control.minimum) max=\(control.maximum) default=\(control.defaultValue)")
        case .string?:
            facts.append("min=\(control.minimum) max=\(control.maximum) step=\(control.step)")
        default:
            facts.append("min=\(control.minimum) max=\(control.maximum) step=\(control.step) default=\(control.defaultValue)")
        }
        if let value = control.value {
            var text = "value=\(value)"
            if let meaning = control.valueText, meaning != value.description, control.type != .bitmask { text += " (\(meaning))" }
            facts.append(text)
        }
        if !control.flags.isEmpty { facts.append("flags=\(control.flags.names.joined(separator: ","))") }
        return "  \(control.name.padding(width)) \(format0x(control.id)) \(type): \(facts.joined(separator: " "))"
    }

    static func featureLines(_ features: FeaturesJSON) -> [String] {
        func modes(_ list: [String], _ current: String?) -> String {
            list.isEmpty ? "not supported" : "\(list.joined(separator: ", ")); now \(current ?? "unknown")"
        }
        var lines: [String] = []
        var focus = "  focus            " + modes(features.focus.modes, features.focus.mode)
        if let position = features.focus.lensPosition { focus += "; lens position \(number(position))" }
        if !features.focus.ranges.isEmpty { focus += "; range \(features.focus.range ?? "none") (of \(features.focus.ranges.joined(separator: ", ")))" }
        lines.append(focus)
        var exposure = "  exposure         " + modes(features.exposure.modes, features.exposure.mode)
        if let duration = features.exposure.duration {
            exposure += "; time \(number(duration)) s"
            if let low = features.exposure.minDuration, let high = features.exposure.maxDuration { exposure += " (\(number(low))…\(number(high)) s)" }
        }
        if let bias = features.exposure.bias, let low = features.exposure.biasValues.first, let high = features.exposure.biasValues.last {
            exposure += "; bias \(number(bias)) EV (\(number(low))…\(number(high)))"
        }
        lines.append(exposure)
        var white = "  white balance    " + modes(features.whiteBalance.modes, features.whiteBalance.mode)
        if let kelvin = features.whiteBalance.temperature { white += "; \(kelvin) K" }
        lines.append(white)
        if features.zoom.supported, let factor = features.zoom.factor, let maximum = features.zoom.maxFactor {
            lines.append("  zoom             \(number(factor))x (1.0…\(number(maximum)))")
        } else {
            lines.append("  zoom             not supported")
        }
        if features.lowLightBoost.supported {
            lines.append("  low-light boost  \(features.lowLightBoost.enabled == true ? "on" : "off")")
        } else {
            lines.append("  low-light boost  not supported")
        }
        return lines
    }

    static func number(_ value: Double) -> String {
        var text = String(cFormat: "%.4f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.append("0") }
        return text
    }
}

/// `0x00980900`.
func format0x(_ id: UInt32) -> String {
    let hex = String(id, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
}
