#if canImport(Glibc)
import Glibc
#endif

/// An open connection to a camera's controls: every raw V4L2 control
/// (listed, read, set by name or ID), AVCaptureDevice's camera features on
/// top of them (focus, exposure, white balance, zoom, low-light boost; see
/// CameraFeatures.swift), and the configuration lock.
///
/// As with AVCaptureDevice, changes require the configuration lock:
/// `lockForConfiguration()` first, `unlockForConfiguration()` after.
package final class DeviceControls {
    /// The device node, as given.
    package let path: String
    let node: any V4L2ControlNode
    /// How long one-shot automatic modes (exposure; focus and white balance
    /// without a one-shot control) run before they are locked.
    package var settleDuration: Double = 1.0
    let clock: any ControlClock
    private var lock: ConfigurationLock?
    /// The configuration lock is held by a capture session of this process
    /// on this very handle (see `init(capturing:path:)`): changes need no lock of their own.
    private let lockedBySession: Bool
    private let lockDirectory: String?
    private let procRoot: String

    /// Wraps an open node of `path`.
    init(node: any V4L2ControlNode, path: String, clock: any ControlClock = MonotonicControlClock(),
                lockDirectory: String? = nil, procRoot: String = "/proc") {
        self.node = node
        self.path = path
        self.clock = clock
        self.lockDirectory = lockDirectory
        self.procRoot = procRoot
        lockedBySession = false
    }

    /// The controls of a camera a session of this process streams while
    /// holding its configuration lock, reached through `node`, the handle
    /// that captures and holds the V4L2 record priority. Another handle,
    /// even of this process, would be refused (EBUSY); through this one the
    /// driver takes the change. Counts as locked for configuration: the
    /// session holds the advisory lock, so other processes stay out.
    init(capturing node: any V4L2ControlNode, path: String) {
        self.node = node
        self.path = path
        clock = MonotonicControlClock()
        lockDirectory = nil
        procRoot = "/proc"
        lockedBySession = true
    }

    /// Opens the camera at `path` for its controls.
    package static func open(_ path: String) throws(ControlError) -> DeviceControls {
        try open(path, interface: KernelV4L2())
    }

    /// Opens `path` through `interface`.
    static func open(_ path: String, interface: any V4L2Interface,
                     clock: any ControlClock = MonotonicControlClock(), lockDirectory: String? = nil) throws(ControlError) -> DeviceControls {
        do {
            let node = try openControlNode(interface, path: path)
            return DeviceControls(node: node, path: path, clock: clock, lockDirectory: lockDirectory)
        } catch {
            throw .device(DeviceError(opening: path, error, kind: "video device"))
        }
    }

    // MARK: Configuration lock

    /// Whether this object holds the device's configuration lock.
    package var isLockedForConfiguration: Bool { lockedBySession || (lock?.isHeld ?? false) }

    /// Whether the driver itself keeps other programs out while the lock is
    /// held (V4L2 priorities); nil while not locked.
    package var isLockEnforcedByDriver: Bool? { lock.map(\.isEnforcedByDriver) }

    /// Takes the configuration lock (see `ConfigurationLock`). Refused with
    /// `.locked`, naming the holder, while another process holds it.
    package func lockForConfiguration() throws(ControlError) {
        if isLockedForConfiguration { return }
        lock = try ConfigurationLock.acquire(node: node, devicePath: path, directory: lockDirectory, procRoot: procRoot)
    }

    /// Releases the configuration lock; the settings stay as they are.
    package func unlockForConfiguration() {
        lock?.release()
        lock = nil
    }

    func requireLock() throws(ControlError) {
        guard isLockedForConfiguration else { throw .notLockedForConfiguration(device: path) }
    }

    // MARK: Listing

    /// Every control the device has, with its current value and menu, in the
    /// driver's order (class by class). Disabled controls are left out.
    package func allControls() throws(ControlError) -> [DeviceControl] {
        try descriptions().filter { $0.controlType != .controlClass && !$0.isDisabled }.map(describe)
    }

    /// The controls grouped by class, with the classes' names as the driver gives them.
    package func controlClasses() throws(ControlError) -> [ControlClassGroup] {
        let all = try descriptions()
        var names: [UInt32: String] = [:]
        for entry in all where entry.controlType == .controlClass {
            names[entry.classID] = entry.name
        }
        var order: [UInt32] = []
        var grouped: [UInt32: [DeviceControl]] = [:]
        for entry in all where entry.controlType != .controlClass && !entry.isDisabled {
            if grouped[entry.classID] == nil { order.append(entry.classID) }
            grouped[entry.classID, default: []].append(describe(entry))
        }
        return order.map { classID in
            ControlClassGroup(id: classID, name: names[classID] ?? ControlClassGroup.defaultName(classID: classID),
                              controls: grouped[classID] ?? [])
        }
    }

    /// The control with this ID, freshly read, or nil when the device lacks it
    /// (or has it disabled).
    package func control(id: UInt32) throws(ControlError) -> DeviceControl? {
        guard let entry = try query(id), !entry.isDisabled, entry.controlType != .controlClass else { return nil }
        return describe(entry)
    }

    /// The control a user named: its v4l2-ctl name ("gain_automatic"), the
    /// driver's label ("Gain, Automatic"), or its ID (decimal or 0x hex).
    package func control(named key: String) throws(ControlError) -> DeviceControl {
        if let id = ControlNames.parseID(key) {
            guard let control = try control(id: id) else {
                throw .unknownControl(device: path, name: key, suggestions: [])
            }
            return control
        }
        let all = try descriptions().filter { $0.controlType != .controlClass && !$0.isDisabled }
        let wanted = DeviceControl.canonicalName(key)
        if let entry = all.first(where: { $0.canonicalName == key }) ?? all.first(where: { $0.canonicalName == wanted }) {
            return describe(entry)
        }
        let names = all.map(\.canonicalName) + CameraFeature.allCases.map(\.rawValue)
        throw .unknownControl(device: path, name: key, suggestions: ControlNames.suggestions(for: key, among: names))
    }

    /// The current value of a control.
    package func value(of control: DeviceControl) throws(ControlError) -> ControlValue {
        do {
            return try readValue(of: control.id, type: control.type, maximumLength: control.maximum)
        } catch {
            throw .requestFailed(device: path, control: control.name, error)
        }
    }

    // MARK: Setting

    /// Sets a control after checking it against what the device says it
    /// accepts: read-only, inactive and out-of-range values are refused with
    /// what is allowed. Answers the value the device stored.
    @discardableResult
    package func setValue(_ value: ControlValue, for control: DeviceControl) throws(ControlError) -> ControlValue {
        try requireLock()
        // Flags change with other controls (inactive while an automatic mode is on): ask again.
        let current = try self.control(id: control.id) ?? control
        try check(value, for: current)
        do {
            switch value {
            case .integer(let number):
                let stored = try node.setControlValue(id: current.id, value: number)
                return .integer(normalize(stored, type: current.type))
            case .string(let text):
                try node.setControlString(id: current.id, value: text)
                return .string(text)
            }
        } catch {
            throw .requestFailed(device: path, control: current.name, error)
        }
    }

    /// Parses `text` as a value of `control` ("60", "on", a menu entry's
    /// name or index, "default", "min", "max") and sets it.
    @discardableResult
    package func setValue(text: String, for control: DeviceControl) throws(ControlError) -> ControlValue {
        try setValue(try ControlValueParser.parse(text, for: control, device: path), for: control)
    }

    /// Sets a control by ID without the checks, for the camera features,
    /// which check their own arguments. Answers the stored value.
    @discardableResult
    func setRaw(_ id: UInt32, _ value: Int64, name: String) throws(ControlError) -> Int64 {
        try requireLock()
        do {
            return try node.setControlValue(id: id, value: value)
        } catch {
            throw .requestFailed(device: path, control: name, error)
        }
    }

    /// Whether `value` is acceptable for `control` as it is now.
    func check(_ value: ControlValue, for control: DeviceControl) throws(ControlError) {
        if control.isReadOnly { throw .readOnly(device: path, control: control.name) }
        if control.isInactive {
            throw .inactive(device: path, control: control.name, hint: inactiveHint(for: control))
        }
        try ControlValueParser.checkRange(value, for: control, device: path)
    }

    private func inactiveHint(for control: DeviceControl) -> String {
        for partnerID in ControlID.automaticPartner[control.id] ?? [] {
            guard let partner = try? self.control(id: partnerID), let value = partner.value?.integer else { continue }
            // Manual is 1 for the exposure menu, 0 (off, or the "Manual" preset) for the others.
            let manual: Int64 = partnerID == ControlID.exposureAuto ? 1 : 0
            guard value != manual else { continue }
            let manualText = partner.type == .boolean ? "off" : (partner.menuItem(index: manual)?.name ?? String(manual))
            return "\(partner.name) is \(partner.describe(.integer(value))); set \(partner.name)=\(manual) (\(manualText)) first, or earlier in the same command"
        }
        return "the driver marks it inactive in the present configuration (an automatic mode or another setting overrides it)"
    }

    // MARK: Reading

    /// Every entry VIDIOC_QUERY_EXT_CTRL lists, class entries included.
    func descriptions() throws(ControlError) -> [V4L2ControlDescription] {
        var list: [V4L2ControlDescription] = []
        var id: UInt32 = 0
        var seen = Set<UInt32>()
        do {
            while let entry = try node.queryControl(id: id | ControlID.nextControlFlags) {
                // A driver that answers the same control twice would loop forever.
                guard seen.insert(entry.id).inserted else { break }
                list.append(entry)
                id = entry.id
            }
        } catch where error.errno == ENOTTY {
            return []
        } catch {
            throw .requestFailed(device: path, control: "", error)
        }
        return list
    }

    func query(_ id: UInt32) throws(ControlError) -> V4L2ControlDescription? {
        do {
            return try node.queryControl(id: id)
        } catch where error.errno == ENOTTY {
            return nil
        } catch {
            throw .requestFailed(device: path, control: String(format0x(id)), error)
        }
    }

    /// The full description of one entry: its menu and current value.
    func describe(_ entry: V4L2ControlDescription) -> DeviceControl {
        let type = V4L2ControlType(rawValue: entry.type)
        var menu: [ControlMenuItem] = []
        if type == .menu || type == .integerMenu, entry.maximum >= entry.minimum, entry.maximum - entry.minimum < 1024 {
            for index in entry.minimum...entry.maximum {
                guard index >= 0, let item = menuItem(entry.id, UInt32(index), integer: type == .integerMenu) else { continue }
                menu.append(item)
            }
        }
        let flags = V4L2ControlFlags(rawValue: entry.flags)
        var value: ControlValue?
        if !flags.contains(.writeOnly), type != .button, type != .controlClass, type.map({ $0.isScalar || $0 == .string }) ?? false {
            value = try? readValue(of: entry.id, type: type, maximumLength: entry.maximum)
        }
        return DeviceControl(id: entry.id, label: entry.name, type: entry.type, minimum: entry.minimum, maximum: entry.maximum,
                             step: entry.step, defaultValue: entry.defaultValue, flags: flags, menu: menu, value: value)
    }

    private func menuItem(_ id: UInt32, _ index: UInt32, integer: Bool) -> ControlMenuItem? {
        if integer {
            guard let number = (try? node.queryIntegerMenuItem(controlID: id, index: index)) ?? nil else { return nil }
            return ControlMenuItem(index: Int64(index), name: String(number), integerValue: number)
        }
        guard let name = (try? node.queryMenuItem(controlID: id, index: index)) ?? nil else { return nil }
        return ControlMenuItem(index: Int64(index), name: name)
    }

    func readValue(of id: UInt32, type: V4L2ControlType?, maximumLength: Int64) throws(SystemCallError) -> ControlValue {
        if type == .string {
            return .string(try node.controlString(id: id, maximumLength: Int(clamping: max(maximumLength, 0))))
        }
        return .integer(normalize(try node.controlValue(id: id), type: type))
    }

    /// Integer value of a control by ID, for the camera features.
    func integerValue(_ id: UInt32, name: String) throws(ControlError) -> Int64 {
        do {
            return normalize(try node.controlValue(id: id), type: nil)
        } catch {
            throw .requestFailed(device: path, control: name, error)
        }
    }

    /// 32-bit controls fill only the low half of the 64-bit value: sign-extend it.
    func normalize(_ raw: Int64, type: V4L2ControlType?) -> Int64 {
        type == .integer64 ? raw : Int64(Int32(truncatingIfNeeded: raw))
    }
}

func format0x(_ id: UInt32) -> String {
    "0x" + String(id, radix: 16, uppercase: false).leftPadded(to: 8)
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}

extension V4L2ControlDescription {
    var controlType: V4L2ControlType? { V4L2ControlType(rawValue: type) }
    /// V4L2_CTRL_CLASS_* of the control.
    var classID: UInt32 { id & 0x0fff_0000 }
    var canonicalName: String { DeviceControl.canonicalName(name) }
}
