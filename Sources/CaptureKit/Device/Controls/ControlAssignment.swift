/// One `name=value` setting: a camera feature (`focus=continuous`,
/// `zoom=2.0`) or a raw control by name or ID (`brightness=60`, `0x980900=60`).
package struct ControlAssignment: Sendable, Hashable, CustomStringConvertible {
    package let key: String
    package let value: String

    package init(key: String, value: String) {
        self.key = key
        self.value = value
    }

    /// Parses `name=value`; nil when there is no `=` or no name. The value
    /// may be empty (a string control) and may itself contain `=`.
    package init?(parsing text: String) {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let key = text[..<equals].trimmingWhitespace()
        guard !key.isEmpty else { return nil }
        self.key = key
        self.value = String(text[text.index(after: equals)...])
    }

    /// The camera feature the key names, if it names one.
    package var feature: CameraFeature? { CameraFeature(rawValue: key.lowercased()) }

    package var description: String { "\(key)=\(value)" }
}

/// A setting as it stands after it was applied.
package struct AppliedSetting: Sendable, Hashable {
    /// The name as capctl prints it: the feature, or the control's v4l2-ctl name.
    package let name: String
    /// The control's ID, for raw controls.
    package let controlID: UInt32?
    package let value: SettingValue
    /// What a raw value means: the menu entry's name, on/off for a boolean.
    package let meaning: String?

    package init(name: String, controlID: UInt32?, value: SettingValue, meaning: String? = nil) {
        self.name = name
        self.controlID = controlID
        self.value = value
        self.meaning = meaning
    }
}

/// A setting's value, typed for JSON.
package enum SettingValue: Sendable, Hashable, CustomStringConvertible {
    case integer(Int64)
    case number(Double)
    case text(String)
    case boolean(Bool)

    package var description: String {
        switch self {
        case .integer(let value): return String(value)
        case .number(let value): return formatFactor(value)
        case .text(let value): return value
        case .boolean(let value): return value ? "on" : "off"
        }
    }
}

/// A feature value, parsed.
enum FeatureValue {
    case focus(FocusMode)
    case lensPosition(Double)
    case focusRange(AutoFocusRangeRestriction)
    case exposure(ExposureMode)
    case exposureTime(Double)
    case exposureBias(Double)
    case whiteBalance(WhiteBalanceMode)
    case temperature(Int64)
    case zoom(Double)
    case lowLightBoost(Bool)
}

extension FeatureValue {
    /// Parses the text of an assignment for `feature`.
    static func parse(_ text: String, feature: CameraFeature, device: String) throws(ControlError) -> FeatureValue {
        let lowered = text.lowercased().trimmingWhitespace()
        let invalid = ControlError.invalidValue(device: device, control: feature.rawValue, value: text, allowed: feature.valueSyntax)
        func mode<T: RawRepresentable>(_: T.Type) -> T? where T.RawValue == String {
            T(rawValue: lowered == "manual" ? "locked" : lowered)
        }
        switch feature {
        case .focus:
            guard let value = mode(FocusMode.self) else { throw invalid }
            return .focus(value)
        case .exposure:
            guard let value = mode(ExposureMode.self) else { throw invalid }
            return .exposure(value)
        case .whiteBalance:
            guard let value = mode(WhiteBalanceMode.self) else { throw invalid }
            return .whiteBalance(value)
        case .focusRange:
            guard let value = AutoFocusRangeRestriction(rawValue: lowered) else { throw invalid }
            return .focusRange(value)
        case .lensPosition:
            guard let value = Double(lowered), value.isFinite else { throw invalid }
            return .lensPosition(value)
        case .exposureTime:
            guard let value = parseSeconds(lowered) else { throw invalid }
            return .exposureTime(value)
        case .exposureBias:
            var number = Substring(lowered)
            if number.hasSuffix("ev") { number = number.dropLast(2) }
            if number.hasPrefix("+") { number = number.dropFirst() }
            guard let value = Double(number.trimmingWhitespace()), value.isFinite else { throw invalid }
            return .exposureBias(value)
        case .temperature:
            var number = Substring(lowered)
            if number.hasSuffix("k") { number = number.dropLast() }
            guard let value = Int64(number.trimmingWhitespace()) else { throw invalid }
            return .temperature(value)
        case .zoom:
            var number = Substring(lowered)
            if number.hasSuffix("x") { number = number.dropLast() }
            guard let value = Double(number), value.isFinite else { throw invalid }
            return .zoom(value)
        case .lowLightBoost:
            switch lowered {
            case "1", "on", "true", "yes": return .lowLightBoost(true)
            case "0", "off", "false", "no": return .lowLightBoost(false)
            default: throw invalid
            }
        }
    }

    /// `0.01`, `1/100`, `10ms`, `0.5s`.
    static func parseSeconds(_ text: String) -> Double? {
        if let slash = text.firstIndex(of: "/") {
            guard let numerator = Double(text[..<slash]), let denominator = Double(text[text.index(after: slash)...]), denominator != 0 else { return nil }
            return numerator / denominator
        }
        if text.hasSuffix("ms") { return Double(text.dropLast(2)).map { $0 / 1000 } }
        if text.hasSuffix("s") { return Double(text.dropLast()) }
        return Double(text)
    }
}

extension DeviceControls {
    /// A resolved assignment, ready to apply.
    enum PlannedSetting {
        case feature(CameraFeature, FeatureValue)
        case control(DeviceControl, ControlValue)
    }

    /// Applies assignments in order, after checking them all: names are
    /// resolved, values parsed and checked against what the device accepts
    /// before anything changes (a control that becomes inactive through an
    /// earlier assignment is caught when its turn comes). `zoomRampRate`
    /// makes zoom changes ramp. Requires the configuration lock. `applied`
    /// hears each setting as it takes effect.
    package func apply(_ assignments: [ControlAssignment], zoomRampRate: Double? = nil,
                      cancellation: ControlCancellation? = nil,
                      applied: (AppliedSetting) -> Void = { _ in }) throws(ControlError) {
        try requireLock()
        var plan: [PlannedSetting] = []
        for assignment in assignments {
            plan.append(try self.plan(assignment))
        }
        for setting in plan {
            applied(try perform(setting, zoomRampRate: zoomRampRate, cancellation: cancellation))
        }
    }

    /// Resolves and checks one assignment without changing anything.
    func plan(_ assignment: ControlAssignment) throws(ControlError) -> PlannedSetting {
        if let feature = assignment.feature {
            let value = try FeatureValue.parse(assignment.value, feature: feature, device: path)
            try preflight(feature, value)
            return .feature(feature, value)
        }
        let control = try self.control(named: assignment.key)
        if control.isReadOnly || control.type == .controlClass { throw .readOnly(device: path, control: control.name) }
        let value = try ControlValueParser.parse(assignment.value, for: control, device: path)
        try ControlValueParser.checkRange(value, for: control, device: path)
        return .control(control, value)
    }

    /// The support and range checks of a feature setting, before anything is set.
    private func preflight(_ feature: CameraFeature, _ value: FeatureValue) throws(ControlError) {
        func unsupported(_ what: String, _ modes: [String], _ none: String) -> ControlError {
            .notSupported(device: path, feature: what, reason: modes.isEmpty ? none : "the device supports \(modes.joined(separator: ", "))")
        }
        switch value {
        case .focus(let mode):
            guard isFocusModeSupported(mode) else {
                throw unsupported("focus mode '\(mode.rawValue)'", FocusMode.allCases.filter(isFocusModeSupported).map(\.rawValue),
                                  "the device has no focus controls")
            }
        case .exposure(let mode):
            guard isExposureModeSupported(mode) else {
                throw unsupported("exposure mode '\(mode.rawValue)'", ExposureMode.allCases.filter(isExposureModeSupported).map(\.rawValue),
                                  "the device has no auto-exposure control (auto_exposure)")
            }
        case .whiteBalance(let mode):
            guard isWhiteBalanceModeSupported(mode) else {
                throw unsupported("white balance mode '\(mode.rawValue)'", WhiteBalanceMode.allCases.filter(isWhiteBalanceModeSupported).map(\.rawValue),
                                  "the device has no automatic white balance control (white_balance_automatic)")
            }
        case .focusRange(let restriction):
            guard isAutoFocusRangeRestrictionSupported(restriction) else {
                throw unsupported("focus range '\(restriction.rawValue)'", AutoFocusRangeRestriction.allCases.filter(isAutoFocusRangeRestrictionSupported).map(\.rawValue),
                                  "the device has no focus range control")
            }
        case .lensPosition(let position):
            guard isLockingFocusWithCustomLensPositionSupported else {
                throw .notSupported(device: path, feature: "lens position", reason: "the device has no absolute focus control (focus_absolute)")
            }
            guard position >= 0, position <= 1 else {
                throw .outOfRange(device: path, control: feature.rawValue, value: String(position), allowed: "0.0 (nearest) to 1.0 (furthest)")
            }
        case .zoom(let factor):
            guard let zoom = usable(ControlID.zoomAbsolute) else {
                throw .notSupported(device: path, feature: "zoom", reason: "the device has no absolute zoom control (zoom_absolute)")
            }
            let maximum = Self.zoomFactor(value: zoom.maximum, zoom: zoom)
            guard factor >= 1, factor <= maximum + 1e-9 else {
                throw .outOfRange(device: path, control: feature.rawValue, value: String(factor), allowed: "1.0…\(formatFactor(maximum))")
            }
        case .temperature(let kelvin):
            guard let temperature = usable(ControlID.whiteBalanceTemperature) else {
                throw .notSupported(device: path, feature: "white balance temperature", reason: "the device has no white balance temperature control")
            }
            guard kelvin >= temperature.minimum, kelvin <= temperature.maximum else {
                throw .outOfRange(device: path, control: feature.rawValue, value: "\(kelvin) K", allowed: "\(temperature.minimum)…\(temperature.maximum) K")
            }
        case .exposureTime(let seconds):
            guard let range = try exposureDurationRange(), usable(ControlID.exposureAbsolute) != nil else {
                throw .notSupported(device: path, feature: "exposure time", reason: "the device has no absolute exposure control (exposure_time_absolute)")
            }
            let units = (seconds * 10_000).rounded()
            guard units >= (range.lowerBound * 10_000).rounded(), units <= (range.upperBound * 10_000).rounded() else {
                throw .outOfRange(device: path, control: feature.rawValue, value: "\(seconds) s", allowed: "\(formatFactor(range.lowerBound))…\(formatFactor(range.upperBound)) s")
            }
        case .exposureBias(let ev):
            let values = exposureTargetBiasValues()
            guard let low = values.first, let high = values.last else {
                throw .notSupported(device: path, feature: "exposure bias", reason: "the device has no exposure compensation control (auto_exposure_bias)")
            }
            guard ev >= low - 0.0005, ev <= high + 0.0005 else {
                throw .outOfRange(device: path, control: feature.rawValue, value: "\(ev) EV", allowed: "\(low)…\(high) EV")
            }
        case .lowLightBoost:
            guard isLowLightBoostSupported else {
                throw .notSupported(device: path, feature: "low-light boost", reason: "the device has no exposure priority control (exposure_dynamic_framerate)")
            }
        }
    }

    private func perform(_ setting: PlannedSetting, zoomRampRate: Double?, cancellation: ControlCancellation?) throws(ControlError) -> AppliedSetting {
        switch setting {
        case .control(let control, let value):
            let stored = try setValue(value, for: control)
            switch stored {
            case .string(let text):
                return AppliedSetting(name: control.name, controlID: control.id, value: .text(text))
            case .integer(let number):
                let words = control.type == .menu || control.type == .integerMenu || control.type == .boolean ? control.describe(stored) : nil
                return AppliedSetting(name: control.name, controlID: control.id, value: .integer(number), meaning: words)
            }
        case .feature(let feature, let value):
            switch value {
            case .focus(let mode):
                try setFocusMode(mode)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .text(mode.rawValue))
            case .lensPosition(let position):
                try setFocusModeLocked(lensPosition: position)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .number(try lensPosition() ?? position))
            case .focusRange(let restriction):
                try setAutoFocusRangeRestriction(restriction)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .text(restriction.rawValue))
            case .exposure(let mode):
                try setExposureMode(mode)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .text(mode.rawValue))
            case .exposureTime(let seconds):
                try setExposureModeCustom(duration: seconds)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .number(try exposureDuration() ?? seconds))
            case .exposureBias(let ev):
                try setExposureTargetBias(ev)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .number(try exposureTargetBias() ?? ev))
            case .whiteBalance(let mode):
                try setWhiteBalanceMode(mode)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .text(mode.rawValue))
            case .temperature(let kelvin):
                try setWhiteBalanceTemperature(kelvin)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .integer(try whiteBalanceTemperature() ?? kelvin))
            case .zoom(let factor):
                if let rate = zoomRampRate {
                    let reached = try rampToVideoZoomFactor(factor, rate: rate, cancellation: cancellation)
                    return AppliedSetting(name: feature.rawValue, controlID: nil, value: .number(reached))
                }
                try setVideoZoomFactor(factor)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .number(try videoZoomFactor() ?? factor))
            case .lowLightBoost(let enabled):
                try setAutomaticallyEnablesLowLightBoostWhenAvailable(enabled)
                return AppliedSetting(name: feature.rawValue, controlID: nil, value: .boolean(enabled))
            }
        }
    }
}
