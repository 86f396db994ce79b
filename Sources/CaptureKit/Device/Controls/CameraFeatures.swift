#if canImport(Glibc)
import Glibc
#endif

/// Focus modes (AVCaptureFocusMode).
public enum FocusMode: String, Sendable, CaseIterable {
    /// The lens stays where it is (V4L2_CID_FOCUS_AUTO off).
    case locked
    /// Focus once, then lock (V4L2_CID_AUTO_FOCUS_START; without it,
    /// continuous focus for the settle time, then locked).
    case autoFocus = "auto"
    /// Focus whenever needed (V4L2_CID_FOCUS_AUTO on).
    case continuousAutoFocus = "continuous"
}

/// Exposure modes (AVCaptureExposureMode), on V4L2_CID_EXPOSURE_AUTO.
public enum ExposureMode: String, Sendable, CaseIterable {
    /// Manual exposure, kept at the value the automatic mode last chose.
    case locked
    /// Expose automatically for the settle time, then lock.
    case autoExpose = "auto"
    /// Automatic exposure (the device's auto or aperture-priority mode).
    case continuousAutoExposure = "continuous"
}

/// White balance modes (AVCaptureWhiteBalanceMode).
public enum WhiteBalanceMode: String, Sendable, CaseIterable {
    /// Automatic white balance off: the gains stay as they are.
    case locked
    /// Balance once (V4L2_CID_DO_WHITE_BALANCE; without it, automatic for
    /// the settle time, then locked).
    case autoWhiteBalance = "auto"
    /// V4L2_CID_AUTO_WHITE_BALANCE on (or the automatic white-balance preset).
    case continuousAutoWhiteBalance = "continuous"
}

/// Where automatic focus looks (AVCaptureAutoFocusRangeRestriction), on
/// V4L2_CID_AUTO_FOCUS_RANGE: none is its auto range, near its macro range,
/// far its infinity range.
public enum AutoFocusRangeRestriction: String, Sendable, CaseIterable {
    case none, near, far

    var menuIndex: Int64 {
        switch self {
        case .none: return 0
        case .near: return 2
        case .far: return 3
        }
    }
}

/// The settings `capctl set` accepts besides raw control names; each maps
/// onto the V4L2 controls the device has.
public enum CameraFeature: String, Sendable, CaseIterable {
    case focus
    case lensPosition = "lens_position"
    case focusRange = "focus_range"
    case exposure
    case exposureTime = "exposure_time"
    case exposureBias = "exposure_bias"
    case whiteBalance = "white_balance"
    case temperature
    case zoom
    case lowLightBoost = "low_light_boost"

    /// What it takes, for help and messages.
    public var valueSyntax: String {
        switch self {
        case .focus, .exposure, .whiteBalance: return "locked, auto or continuous"
        case .lensPosition: return "0.0 (nearest) to 1.0 (furthest)"
        case .focusRange: return "none, near or far"
        case .exposureTime: return "seconds, as a decimal (0.01) or a fraction (1/100)"
        case .exposureBias: return "EV, such as -1.5 or 0.7"
        case .temperature: return "kelvin, such as 4600"
        case .zoom: return "a factor from 1.0"
        case .lowLightBoost: return "on or off"
        }
    }
}

// Menu entries of V4L2_CID_EXPOSURE_AUTO.
private let exposureAutoMode: Int64 = 0
private let exposureManualMode: Int64 = 1
private let exposureShutterPriority: Int64 = 2
private let exposureAperturePriority: Int64 = 3
/// V4L2_CID_AUTO_FOCUS_STATUS bit: focusing in progress.
private let autoFocusBusy: Int64 = 1

extension DeviceControls {
    /// A control the device has and can change, or nil.
    func usable(_ id: UInt32) -> DeviceControl? {
        guard let control = (try? self.control(id: id)) ?? nil, !control.isReadOnly else { return nil }
        return control
    }

    func unsupported(_ feature: String, _ reason: String) -> ControlError {
        .notSupported(device: path, feature: feature, reason: reason)
    }

    // MARK: Focus

    package func isFocusModeSupported(_ mode: FocusMode) -> Bool {
        let auto = usable(ControlID.focusAuto) != nil
        switch mode {
        case .locked: return auto || usable(ControlID.focusAbsolute) != nil
        case .autoFocus: return usable(ControlID.autoFocusStart) != nil || auto
        case .continuousAutoFocus: return auto
        }
    }

    /// The focus mode now, or nil when the device has no focus control.
    package func focusMode() throws(ControlError) -> FocusMode? {
        if let auto = try control(id: ControlID.focusAuto) {
            return auto.value?.integer == 1 ? .continuousAutoFocus : .locked
        }
        if try control(id: ControlID.focusAbsolute) != nil { return .locked }
        if try control(id: ControlID.autoFocusStart) != nil { return .locked }
        return nil
    }

    /// Whether a one-shot focus is running (V4L2_CID_AUTO_FOCUS_STATUS busy).
    package func isAdjustingFocus() -> Bool {
        guard let status = (try? control(id: ControlID.autoFocusStatus)) ?? nil, let value = status.value?.integer else { return false }
        return value & autoFocusBusy != 0
    }

    package func setFocusMode(_ mode: FocusMode) throws(ControlError) {
        try requireLock()
        guard isFocusModeSupported(mode) else {
            throw unsupported("focus mode '\(mode.rawValue)'", supportedText(FocusMode.allCases.filter(isFocusModeSupported).map(\.rawValue), what: "focus modes"))
        }
        let auto = usable(ControlID.focusAuto)
        switch mode {
        case .locked:
            if auto != nil { try setRaw(ControlID.focusAuto, 0, name: "focus") }
        case .continuousAutoFocus:
            try setRaw(ControlID.focusAuto, 1, name: "focus")
        case .autoFocus:
            if usable(ControlID.autoFocusStart) != nil {
                // A one-shot focus applies in manual focus mode only.
                if auto != nil { try setRaw(ControlID.focusAuto, 0, name: "focus") }
                try setRaw(ControlID.autoFocusStart, 1, name: "focus")
                // Wait, within bounds, for the device to report the focus done.
                let deadline = clock.now() + settleDuration * 3
                while isAdjustingFocus(), clock.now() < deadline {
                    clock.sleep(until: clock.now() + 0.05)
                }
            } else {
                try setRaw(ControlID.focusAuto, 1, name: "focus")
                clock.sleep(until: clock.now() + settleDuration)
                try setRaw(ControlID.focusAuto, 0, name: "focus")
            }
        }
    }

    /// Whether the lens can be put at a chosen position (V4L2_CID_FOCUS_ABSOLUTE).
    package var isLockingFocusWithCustomLensPositionSupported: Bool { usable(ControlID.focusAbsolute) != nil }

    /// The lens position from 0.0 (nearest) to 1.0 (furthest), or nil
    /// without V4L2_CID_FOCUS_ABSOLUTE. V4L2 counts the other way: larger values focus closer.
    package func lensPosition() throws(ControlError) -> Double? {
        guard let focus = try control(id: ControlID.focusAbsolute), let value = focus.value?.integer, focus.maximum > focus.minimum else { return nil }
        return Double(focus.maximum - value) / Double(focus.maximum - focus.minimum)
    }

    /// Locks focus with the lens at `position` (0.0 nearest … 1.0 furthest),
    /// turning continuous focus off first.
    package func setFocusModeLocked(lensPosition position: Double) throws(ControlError) {
        try requireLock()
        guard let focus = usable(ControlID.focusAbsolute) else {
            throw unsupported("lens position", "the device has no absolute focus control (focus_absolute)")
        }
        guard position.isFinite, position >= 0, position <= 1 else {
            throw .outOfRange(device: path, control: CameraFeature.lensPosition.rawValue, value: String(position), allowed: "0.0 (nearest) to 1.0 (furthest)")
        }
        if usable(ControlID.focusAuto) != nil { try setRaw(ControlID.focusAuto, 0, name: "focus") }
        let span = Double(focus.maximum - focus.minimum)
        let value = snap(focus.maximum - Int64((position * span).rounded()), focus)
        try setRaw(ControlID.focusAbsolute, value, name: CameraFeature.lensPosition.rawValue)
    }

    package var isAutoFocusRangeRestrictionSupported: Bool {
        guard let range = usable(ControlID.autoFocusRange) else { return false }
        return range.menuItem(index: AutoFocusRangeRestriction.near.menuIndex) != nil
            || range.menuItem(index: AutoFocusRangeRestriction.far.menuIndex) != nil
    }

    package func isAutoFocusRangeRestrictionSupported(_ restriction: AutoFocusRangeRestriction) -> Bool {
        guard let range = usable(ControlID.autoFocusRange) else { return restriction == .none }
        return range.menuItem(index: restriction.menuIndex) != nil
    }

    /// The range restriction now: none unless the device has V4L2_CID_AUTO_FOCUS_RANGE set to macro or infinity.
    package func autoFocusRangeRestriction() throws(ControlError) -> AutoFocusRangeRestriction {
        guard let range = try control(id: ControlID.autoFocusRange), let value = range.value?.integer else { return .none }
        switch value {
        case AutoFocusRangeRestriction.near.menuIndex: return .near
        case AutoFocusRangeRestriction.far.menuIndex: return .far
        default: return .none
        }
    }

    package func setAutoFocusRangeRestriction(_ restriction: AutoFocusRangeRestriction) throws(ControlError) {
        try requireLock()
        guard isAutoFocusRangeRestrictionSupported(restriction) else {
            throw unsupported("focus range '\(restriction.rawValue)'", supportedText(AutoFocusRangeRestriction.allCases.filter(isAutoFocusRangeRestrictionSupported).map(\.rawValue), what: "focus ranges"))
        }
        guard usable(ControlID.autoFocusRange) != nil else { return }
        try setRaw(ControlID.autoFocusRange, restriction.menuIndex, name: CameraFeature.focusRange.rawValue)
    }

    // MARK: Exposure

    /// The menu index of the device's automatic exposure mode: full auto where
    /// it has it, else aperture priority (the usual UVC auto), else shutter priority.
    private func automaticExposureIndex(_ menu: DeviceControl) -> Int64? {
        [exposureAutoMode, exposureAperturePriority, exposureShutterPriority].first { menu.menuItem(index: $0) != nil }
    }

    package func isExposureModeSupported(_ mode: ExposureMode) -> Bool {
        guard let menu = usable(ControlID.exposureAuto) else { return false }
        let manual = menu.menuItem(index: exposureManualMode) != nil
        let automatic = automaticExposureIndex(menu) != nil
        switch mode {
        case .locked: return manual
        case .autoExpose: return manual && automatic
        case .continuousAutoExposure: return automatic
        }
    }

    /// The exposure mode now, or nil without V4L2_CID_EXPOSURE_AUTO.
    package func exposureMode() throws(ControlError) -> ExposureMode? {
        guard let menu = try control(id: ControlID.exposureAuto), let value = menu.value?.integer else { return nil }
        return value == exposureManualMode ? .locked : .continuousAutoExposure
    }

    package func setExposureMode(_ mode: ExposureMode) throws(ControlError) {
        try requireLock()
        guard isExposureModeSupported(mode), let menu = usable(ControlID.exposureAuto) else {
            let modes = ExposureMode.allCases.filter(isExposureModeSupported).map(\.rawValue)
            throw unsupported("exposure mode '\(mode.rawValue)'", supportedText(modes, what: "exposure modes", missing: "the device has no auto-exposure control (auto_exposure)"))
        }
        switch mode {
        case .continuousAutoExposure:
            try setRaw(ControlID.exposureAuto, automaticExposureIndex(menu) ?? exposureAutoMode, name: "exposure")
        case .locked:
            try lockExposure()
        case .autoExpose:
            try setRaw(ControlID.exposureAuto, automaticExposureIndex(menu) ?? exposureAutoMode, name: "exposure")
            clock.sleep(until: clock.now() + settleDuration)
            try lockExposure()
        }
    }

    /// Manual exposure at the time the automatic mode chose last: read it
    /// (volatile while automatic), switch to manual, write it back.
    private func lockExposure() throws(ControlError) {
        let chosen = try control(id: ControlID.exposureAbsolute)?.value?.integer
        try setRaw(ControlID.exposureAuto, exposureManualMode, name: "exposure")
        if let chosen, let time = usable(ControlID.exposureAbsolute), chosen >= time.minimum, chosen <= time.maximum {
            try setRaw(ControlID.exposureAbsolute, chosen, name: CameraFeature.exposureTime.rawValue)
        }
    }

    /// The exposure time in seconds (V4L2_CID_EXPOSURE_ABSOLUTE counts 100 µs), or nil without it.
    package func exposureDuration() throws(ControlError) -> Double? {
        guard let time = try control(id: ControlID.exposureAbsolute), let value = time.value?.integer else { return nil }
        return Double(value) / 10_000
    }

    /// The shortest and longest exposure times the device accepts, in seconds.
    package func exposureDurationRange() throws(ControlError) -> ClosedRange<Double>? {
        guard let time = try control(id: ControlID.exposureAbsolute) else { return nil }
        return Double(time.minimum) / 10_000...Double(time.maximum) / 10_000
    }

    /// Manual exposure with a chosen time, in seconds (AVFoundation's custom
    /// exposure mode): switches the automatic mode off first.
    package func setExposureModeCustom(duration: Double) throws(ControlError) {
        try requireLock()
        guard let time = usable(ControlID.exposureAbsolute) else {
            throw unsupported("exposure time", "the device has no absolute exposure control (exposure_time_absolute)")
        }
        let allowed = "\(seconds(time.minimum))…\(seconds(time.maximum)) s"
        guard duration.isFinite, duration > 0 else {
            throw .outOfRange(device: path, control: CameraFeature.exposureTime.rawValue, value: String(duration), allowed: allowed)
        }
        let units = Int64((duration * 10_000).rounded())
        guard units >= time.minimum, units <= time.maximum else {
            throw .outOfRange(device: path, control: CameraFeature.exposureTime.rawValue, value: "\(duration) s", allowed: allowed)
        }
        if let menu = usable(ControlID.exposureAuto), menu.value?.integer != exposureManualMode {
            guard menu.menuItem(index: exposureManualMode) != nil else {
                throw unsupported("exposure time", "the device has no manual exposure mode")
            }
            try setRaw(ControlID.exposureAuto, exposureManualMode, name: "exposure")
        }
        try setRaw(ControlID.exposureAbsolute, snap(units, time), name: CameraFeature.exposureTime.rawValue)
    }

    /// Exposure compensation values the device offers, in EV (V4L2_CID_AUTO_EXPOSURE_BIAS counts 0.001 EV).
    package func exposureTargetBiasValues() -> [Double] {
        guard let bias = usable(ControlID.autoExposureBias) else { return [] }
        return bias.menu.compactMap { $0.integerValue }.map { Double($0) / 1000 }.sorted()
    }

    /// The exposure compensation now, in EV, or nil without the control.
    package func exposureTargetBias() throws(ControlError) -> Double? {
        guard let bias = try control(id: ControlID.autoExposureBias), let index = bias.value?.integer,
              let number = bias.menuItem(index: index)?.integerValue else { return nil }
        return Double(number) / 1000
    }

    /// Sets the exposure compensation to the offered value nearest `ev`;
    /// outside the offered range it is refused.
    package func setExposureTargetBias(_ ev: Double) throws(ControlError) {
        try requireLock()
        guard let bias = usable(ControlID.autoExposureBias), !bias.menu.isEmpty else {
            throw unsupported("exposure bias", "the device has no exposure compensation control (auto_exposure_bias)")
        }
        let values = bias.menu.compactMap { item in item.integerValue.map { (item.index, Double($0) / 1000) } }
        guard let low = values.map(\.1).min(), let high = values.map(\.1).max() else {
            throw unsupported("exposure bias", "the device lists no compensation values")
        }
        guard ev.isFinite, ev >= low - 0.0005, ev <= high + 0.0005 else {
            throw .outOfRange(device: path, control: CameraFeature.exposureBias.rawValue, value: "\(ev) EV", allowed: "\(low)…\(high) EV")
        }
        let nearest = values.min { abs($0.1 - ev) < abs($1.1 - ev) }!
        try setRaw(ControlID.autoExposureBias, nearest.0, name: CameraFeature.exposureBias.rawValue)
    }

    // MARK: White balance

    package func isWhiteBalanceModeSupported(_ mode: WhiteBalanceMode) -> Bool {
        if usable(ControlID.autoWhiteBalance) != nil { return true }
        guard let presets = usable(ControlID.autoNPresetWhiteBalance) else { return false }
        let manual = presets.menuItem(index: 0) != nil
        let automatic = presets.menuItem(index: 1) != nil
        switch mode {
        case .locked: return manual
        case .autoWhiteBalance: return manual && automatic
        case .continuousAutoWhiteBalance: return automatic
        }
    }

    /// The white balance mode now, or nil when the device has no control for it.
    package func whiteBalanceMode() throws(ControlError) -> WhiteBalanceMode? {
        if let auto = try control(id: ControlID.autoWhiteBalance) {
            return auto.value?.integer == 1 ? .continuousAutoWhiteBalance : .locked
        }
        if let presets = try control(id: ControlID.autoNPresetWhiteBalance) {
            return presets.value?.integer == 1 ? .continuousAutoWhiteBalance : .locked
        }
        return nil
    }

    package func setWhiteBalanceMode(_ mode: WhiteBalanceMode) throws(ControlError) {
        try requireLock()
        guard isWhiteBalanceModeSupported(mode) else {
            let modes = WhiteBalanceMode.allCases.filter(isWhiteBalanceModeSupported).map(\.rawValue)
            throw unsupported("white balance mode '\(mode.rawValue)'", supportedText(modes, what: "white balance modes", missing: "the device has no automatic white balance control (white_balance_automatic)"))
        }
        let usesSwitch = usable(ControlID.autoWhiteBalance) != nil
        let id = usesSwitch ? ControlID.autoWhiteBalance : ControlID.autoNPresetWhiteBalance
        switch mode {
        case .locked:
            try setRaw(id, 0, name: "white_balance")
        case .continuousAutoWhiteBalance:
            try setRaw(id, 1, name: "white_balance")
        case .autoWhiteBalance:
            if usesSwitch, usable(ControlID.doWhiteBalance) != nil {
                try setRaw(id, 0, name: "white_balance")
                try setRaw(ControlID.doWhiteBalance, 1, name: "white_balance")
            } else {
                try setRaw(id, 1, name: "white_balance")
                clock.sleep(until: clock.now() + settleDuration)
                try setRaw(id, 0, name: "white_balance")
            }
        }
    }

    /// The white balance temperature in kelvin, or nil without V4L2_CID_WHITE_BALANCE_TEMPERATURE.
    package func whiteBalanceTemperature() throws(ControlError) -> Int64? {
        try control(id: ControlID.whiteBalanceTemperature)?.value?.integer
    }

    /// Locks white balance at a temperature in kelvin, turning automatic white balance off first.
    package func setWhiteBalanceTemperature(_ kelvin: Int64) throws(ControlError) {
        try requireLock()
        guard let temperature = usable(ControlID.whiteBalanceTemperature) else {
            throw unsupported("white balance temperature", "the device has no white balance temperature control")
        }
        guard kelvin >= temperature.minimum, kelvin <= temperature.maximum else {
            throw .outOfRange(device: path, control: CameraFeature.temperature.rawValue, value: "\(kelvin) K", allowed: "\(temperature.minimum)…\(temperature.maximum) K")
        }
        if let auto = usable(ControlID.autoWhiteBalance), auto.value?.integer != 0 {
            try setRaw(ControlID.autoWhiteBalance, 0, name: "white_balance")
        } else if let presets = usable(ControlID.autoNPresetWhiteBalance), presets.value?.integer != 0 {
            try setRaw(ControlID.autoNPresetWhiteBalance, 0, name: "white_balance")
        }
        try setRaw(ControlID.whiteBalanceTemperature, snap(kelvin, temperature), name: CameraFeature.temperature.rawValue)
    }

    // MARK: Helpers

    /// The value on the control's step grid nearest to `value`, within its range.
    func snap(_ value: Int64, _ control: DeviceControl) -> Int64 {
        let clamped = min(max(value, control.minimum), control.maximum)
        guard control.step > 1 else { return clamped }
        let step = Int64(control.step)
        let offset = clamped - control.minimum
        var snapped = control.minimum + ((offset + step / 2) / step) * step
        if snapped > control.maximum { snapped -= step }
        return snapped
    }

    private func supportedText(_ supported: [String], what: String, missing: String? = nil) -> String {
        if supported.isEmpty { return missing ?? "the device has no controls for it" }
        return "the device supports \(supported.joined(separator: ", "))"
    }

    private func seconds(_ units: Int64) -> String {
        formatFactor(Double(units) / 10_000)
    }
}

/// A number with up to four decimals and no trailing zeros.
func formatFactor(_ value: Double) -> String {
    guard value.isFinite, abs(value) < 1e14 else { return "\(value)" }
    var text = String(Int64((value * 10_000).rounded()))
    let negative = text.hasPrefix("-")
    if negative { text.removeFirst() }
    while text.count < 5 { text = "0" + text }
    var fraction = String(text.suffix(4))
    let whole = String(text.dropLast(4))
    while fraction.hasSuffix("0") { fraction.removeLast() }
    return (negative ? "-" : "") + whole + (fraction.isEmpty ? ".0" : "." + fraction)
}
