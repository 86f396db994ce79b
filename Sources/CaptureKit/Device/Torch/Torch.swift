/// Torch modes (AVCaptureTorchMode). Linux lights have no automatic mode.
public enum TorchMode: String, Sendable, CaseIterable {
    case off, on, auto
}

/// A torch level to set: a fraction of the light's full output, or the most
/// it can give now (AVCaptureMaxAvailableTorchLevel).
public enum TorchLevel: Sendable, Hashable, CustomStringConvertible {
    case level(Double)
    case maximumAvailable

    public var description: String {
        switch self {
        case .level(let value): return formatFactor(value)
        case .maximumAvailable: return "max"
        }
    }
}

/// Where a light is driven from.
package enum TorchSource: Sendable, Hashable, CustomStringConvertible {
    /// V4L2 flash controls on a camera node or a flash sub-device.
    case v4l2(path: String, isSubdevice: Bool)
    /// An LED class device under /sys/class/leds.
    case led(name: String, directory: String)

    package var description: String {
        switch self {
        case .v4l2(let path, let isSubdevice): return isSubdevice ? "\(path) (V4L2 flash sub-device)" : "\(path) (V4L2 flash controls)"
        case .led(let name, _): return "LED \(name)"
        }
    }
}

/// A light's state: the counterpart of AVCaptureDevice's torch and flash properties.
package struct TorchStatus: Sendable, Hashable {
    package let source: TorchSource
    package let hasTorch: Bool
    package let hasFlash: Bool
    /// Whether the torch is on now.
    package let isTorchActive: Bool
    /// The torch level now, 0.0 (off) to 1.0 (full output).
    package let torchLevel: Double
    /// Whether the torch can be turned on now (no fault such as overheating).
    package let isTorchAvailable: Bool
    /// The highest level that can be set now.
    package let maxAvailableTorchLevel: Double
    /// Faults the hardware reports, in words ("led-over-temperature").
    package let faults: [String]
}

/// Why a torch could not be found or changed.
public enum TorchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The device (or light) has no torch of the kind asked for.
    case noTorch(String, reason: String)
    /// No light was found at all for this device or system: no V4L2 flash
    /// controls, no flash sub-device, no LED class torch or flash. Any LED
    /// class device can still be driven by name (`torch(led:)`).
    case noLightFound(String, reason: String)
    /// No LED class device by that name.
    case noSuchLED(String, available: [String])
    /// A level outside 0…1 (or 0 itself, which turns nothing on).
    case levelOutOfRange(Double)
    /// A level the light cannot give now; the torch was left as it was.
    case levelUnavailable(requested: TorchLevel, available: Double, reason: String)
    case modeNotSupported(TorchMode, String)
    /// A file this user may not write; the hint says how to get access.
    case permissionDenied(file: String, hint: String)
    /// The light is held elsewhere (a V4L2 flash sub-device in use keeps its LED from sysfs).
    case busy(String, reason: String)
    /// A V4L2 request failed, the configuration lock was refused, or the device could not be opened.
    case control(ControlError)
    /// Reading or writing a sysfs file failed.
    case io(file: String, SystemCallError)

    public var description: String {
        switch self {
        case .noTorch(let subject, let reason), .noLightFound(let subject, let reason):
            return "\(subject): no torch: \(reason)"
        case .noSuchLED(let name, let available):
            let list = available.isEmpty ? "there are no LED class devices" : "LEDs here: \(available.prefix(8).joined(separator: ", "))\(available.count > 8 ? " …" : "")"
            return "no LED named '\(name)' under /sys/class/leds; \(list)"
        case .levelOutOfRange(let level):
            return level == 0
                ? "a torch level of 0 turns nothing on; use 'off' to turn the torch off"
                : "torch level \(formatFactor(level)) is outside 0.0…1.0; give a fraction of full output, or 'max'"
        case .levelUnavailable(let requested, let available, let reason):
            return "torch level \(requested) is above the \(formatFactor(available)) currently available (\(reason)); the torch was not changed"
        case .modeNotSupported(let mode, let subject):
            return "\(subject): torch mode '\(mode.rawValue)' is not supported (Linux lights have on and off)"
        case .permissionDenied(let file, let hint):
            return "cannot write \(file): permission denied; \(hint)"
        case .busy(let subject, let reason):
            return "\(subject): \(reason)"
        case .control(let error):
            return error.description
        case .io(let file, let error):
            return "\(file): \(error)"
        }
    }
}

/// What a light is driven through.
protocol TorchBackend: AnyObject {
    var source: TorchSource { get }
    var hasTorch: Bool { get }
    var hasFlash: Bool { get }
    func status() throws(TorchError) -> TorchStatus
    /// Sets the torch on at a raw fraction already checked against what is available.
    func turnOn(level: Double) throws(TorchError)
    func turnOff() throws(TorchError)
    /// Fires the flash once.
    func strobeFlash() throws(TorchError)
    func lockForConfiguration() throws(TorchError)
    func unlockForConfiguration()
}

/// A camera's torch and flash: V4L2 flash controls or an LED class device.
/// Obtain one from `TorchDiscovery`.
package final class Torch {
    let backend: any TorchBackend

    init(backend: any TorchBackend) {
        self.backend = backend
    }

    package var source: TorchSource { backend.source }
    /// Whether the light can stay on (a torch).
    package var hasTorch: Bool { backend.hasTorch }
    /// Whether the light can fire for one frame (a flash).
    package var hasFlash: Bool { backend.hasFlash }

    package func isTorchModeSupported(_ mode: TorchMode) -> Bool {
        mode != .auto && hasTorch
    }

    package func status() throws(TorchError) -> TorchStatus { try backend.status() }
    package func torchLevel() throws(TorchError) -> Double { try status().torchLevel }
    package func isTorchActive() throws(TorchError) -> Bool { try status().isTorchActive }
    package func isTorchAvailable() throws(TorchError) -> Bool { try status().isTorchAvailable }

    /// For V4L2 lights, takes the configuration lock of the node they are on;
    /// LED class devices have none.
    package func lockForConfiguration() throws(TorchError) { try backend.lockForConfiguration() }
    package func unlockForConfiguration() { backend.unlockForConfiguration() }

    /// Turns the torch on at `level`. A level outside 0…1 (or 0) is refused;
    /// a level above what is currently available is refused with
    /// `.levelUnavailable` and the torch is left as it was; `.maximumAvailable`
    /// takes whatever is available. Answers the level set.
    @discardableResult
    package func setTorchModeOn(level: TorchLevel) throws(TorchError) -> Double {
        guard isTorchModeSupported(.on) else { throw .modeNotSupported(.on, source.description) }
        if case .level(let value) = level, !(value > 0 && value <= 1) {
            throw .levelOutOfRange(value)
        }
        let now = try status()
        let wanted: Double
        switch level {
        case .level(let value): wanted = value
        case .maximumAvailable: wanted = now.maxAvailableTorchLevel
        }
        guard now.isTorchAvailable, wanted > 0, wanted <= now.maxAvailableTorchLevel + 1e-9 else {
            let reason = now.faults.isEmpty ? "the light is unavailable" : now.faults.joined(separator: ", ")
            throw .levelUnavailable(requested: level, available: now.isTorchAvailable ? now.maxAvailableTorchLevel : 0, reason: reason)
        }
        try backend.turnOn(level: wanted)
        return try status().torchLevel
    }

    /// Sets the torch mode; `on` takes the maximum available level.
    package func setTorchMode(_ mode: TorchMode) throws(TorchError) {
        switch mode {
        case .off:
            guard hasTorch else { throw .modeNotSupported(.off, source.description) }
            try backend.turnOff()
        case .on:
            try setTorchModeOn(level: .maximumAvailable)
        case .auto:
            throw .modeNotSupported(.auto, source.description)
        }
    }

    /// Fires the flash once (V4L2 software strobe, or the LED's flash_strobe).
    package func strobeFlash() throws(TorchError) {
        guard hasFlash else { throw .noTorch(source.description, reason: "it has no flash (strobe)") }
        try backend.strobeFlash()
    }
}
