@testable import CaptureKit
import Foundation
import Glibc

/// A camera whose controls behave as the kernel's control framework does:
/// values are clamped and rounded to the step, read-only controls refuse
/// writes (EACCES), priorities keep other handles out (EBUSY), control events
/// reach the other handles that subscribed, and a disconnect makes every
/// handle see POLLHUP and ENODEV. Several handles (file descriptors) share it.
final class FakeCamera: @unchecked Sendable {
    struct Control {
        var description: V4L2ControlDescription
        var value: Int64
        var text: String = ""
        /// Menu entries by index: names, or values for integer menus.
        var menu: [UInt32: String] = [:]
        var integerMenu: [UInt32: Int64] = [:]
    }

    var capability = V4L2Capability(driver: "fake", card: "Fake Camera", busInfo: "platform:fake", capabilities: 0x8400_0001, deviceCaps: 0x0400_0001)
    private(set) var order: [UInt32] = []
    var controls: [UInt32: Control] = [:]
    /// Every successful set: (control ID, value stored, clock time).
    var log: [(id: UInt32, value: Int64, time: Double)] = []
    var clock: FakeClock?
    /// When false, VIDIOC_S_PRIORITY answers ENOTTY (a driver without priorities).
    var supportsPriority = true
    /// Rules that change flags with other controls' values (auto clusters).
    var inactiveWhen: [UInt32: (controlID: UInt32, value: Int64)] = [:]
    var handles: [FakeControlHandle] = []
    private(set) var isDisconnected = false

    func add(_ id: UInt32, _ name: String, type: V4L2ControlType, min: Int64 = 0, max: Int64 = 1, step: UInt64 = 1,
             default defaultValue: Int64 = 0, value: Int64? = nil, flags: V4L2ControlFlags = [],
             menu: [UInt32: String] = [:], integerMenu: [UInt32: Int64] = [:], text: String = "") {
        let description = V4L2ControlDescription(id: id, type: type.rawValue, name: name, minimum: min, maximum: max,
                                                 step: step, defaultValue: defaultValue, flags: flags.rawValue)
        if controls[id] == nil { order.append(id) }
        order.sort()
        controls[id] = Control(description: description, value: value ?? defaultValue, text: text, menu: menu, integerMenu: integerMenu)
    }

    func remove(_ id: UInt32) {
        controls[id] = nil
        order.removeAll { $0 == id }
    }

    /// A class entry, as drivers list before their controls ("User Controls").
    func addClass(_ classID: UInt32, _ name: String) {
        add(classID | 1, name, type: .controlClass, min: 0, max: 0, step: 0, flags: [.readOnly, .writeOnly])
    }

    func value(_ id: UInt32) -> Int64? { controls[id]?.value }

    func flags(_ id: UInt32) -> UInt32 {
        guard let control = controls[id] else { return 0 }
        var flags = control.description.flags
        if let rule = inactiveWhen[id], controls[rule.controlID]?.value == rule.value { flags |= V4L2ControlFlags.inactive.rawValue }
        return flags
    }

    func description(_ id: UInt32) -> V4L2ControlDescription? {
        guard var description = controls[id]?.description else { return nil }
        description.flags = flags(id)
        return description
    }

    /// What the kernel stores for a value: clamped, rounded to the step.
    func store(_ id: UInt32, _ raw: Int64, from handle: FakeControlHandle?) throws(SystemCallError) -> Int64 {
        if isDisconnected { throw SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: ENODEV) }
        guard var control = controls[id] else { throw SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: EINVAL) }
        if let handle, handles.contains(where: { $0 !== handle && $0.priorityValue.rawValue > handle.priorityValue.rawValue }) {
            throw SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: EBUSY)
        }
        let d = control.description
        if d.flags & V4L2ControlFlags.readOnly.rawValue != 0 { throw SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: EACCES) }
        var value = raw
        switch V4L2ControlType(rawValue: d.type) {
        case .button?:
            value = 0
        case .menu?, .integerMenu?:
            guard value >= d.minimum, value <= d.maximum, control.menu[UInt32(value)] != nil || control.integerMenu[UInt32(value)] != nil else {
                throw SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: EINVAL)
            }
        case .bitmask?:
            value = raw & d.maximum
        default:
            value = Swift.min(Swift.max(raw, d.minimum), d.maximum)
            if d.step > 1 {
                let step = Int64(d.step)
                value = d.minimum + ((value - d.minimum + step / 2) / step) * step
                if value > d.maximum { value -= step }
            }
        }
        let changed = control.value != value
        control.value = value
        controls[id] = control
        log.append((id, value, clock?.now() ?? 0))
        if changed || V4L2ControlType(rawValue: d.type) == .button {
            for other in handles where other !== handle {
                other.queue(.control(id: id, changes: V4L2Event.valueChanged, value: value, flags: flags(id),
                                     minimum: d.minimum, maximum: d.maximum, step: Int64(d.step), defaultValue: d.defaultValue))
            }
        }
        return value
    }

    /// Another program changes a control (its events reach every handle).
    func externalSet(_ id: UInt32, _ value: Int64) {
        _ = try? store(id, value, from: nil)
    }

    func sourceChange() {
        for handle in handles { handle.queue(.sourceChange(input: 0, changes: V4L2Event.resolutionChanged)) }
    }

    /// The device goes away: handles see POLLHUP, requests fail with ENODEV.
    func disconnect() {
        isDisconnected = true
        for handle in handles { handle.hangUp() }
    }

    /// The device is back (a driver that re-registers it on the same node).
    func reconnect() {
        isDisconnected = false
    }

    /// The values set to `id`, in order.
    func sets(of id: UInt32) -> [Int64] { log.filter { $0.id == id }.map(\.value) }
}

/// One open file handle of a FakeCamera.
final class FakeControlHandle: V4L2ControlNode {
    let camera: FakeCamera
    var priorityValue: V4L2Priority = .interactive
    private var subscriptions = Set<V4L2EventSubscription>()
    private var queued: [V4L2Event] = []
    private var pipeEnds: [Int32] = [-1, -1]

    init(camera: FakeCamera) {
        self.camera = camera
        _ = pipe(&pipeEnds)
        _ = fcntl(pipeEnds[0], F_SETFL, O_NONBLOCK)
        camera.handles.append(self)
    }

    deinit {
        close(pipeEnds[0])
        if pipeEnds[1] >= 0 { close(pipeEnds[1]) }
    }

    /// Closes the handle: it leaves the camera (and its priority with it).
    func release() {
        camera.handles.removeAll { $0 === self }
    }

    func queue(_ event: V4L2Event) {
        let subscribed: Bool
        switch event {
        case .control(let id, _, _, _, _, _, _, _): subscribed = subscriptions.contains { $0.type == V4L2EventSubscription.controlType && $0.id == id }
        case .sourceChange: subscribed = subscriptions.contains { $0.type == V4L2EventSubscription.sourceChangeType }
        case .other: subscribed = false
        }
        guard subscribed else { return }
        queued.append(event)
        var byte: UInt8 = 1
        _ = write(pipeEnds[1], &byte, 1)
    }

    func hangUp() {
        close(pipeEnds[1])
        pipeEnds[1] = -1
    }

    // V4L2Node
    func queryCapability() throws(SystemCallError) -> V4L2Capability { camera.capability }
    func enumerateFormat(index: UInt32) throws(SystemCallError) -> V4L2FormatDescription? { nil }
    func enumerateFrameSize(pixelFormat: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameSizeReply? { nil }
    func enumerateFrameInterval(pixelFormat: UInt32, width: UInt32, height: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameIntervalReply? { nil }
    func currentFormat() throws(SystemCallError) -> V4L2CurrentFormat { V4L2CurrentFormat(pixelFormat: 0, width: 0, height: 0) }
    func currentFrameInterval() throws(SystemCallError) -> Fraction? { nil }

    func queryControl(id: UInt32) throws(SystemCallError) -> V4L2ControlDescription? {
        if camera.isDisconnected { throw SystemCallError(call: "ioctl(VIDIOC_QUERY_EXT_CTRL)", errno: ENODEV) }
        if id & ControlID.nextControlFlags != 0 {
            let after = id & ~ControlID.nextControlFlags
            guard let next = camera.order.first(where: { $0 > after }) else { return nil }
            return camera.description(next)
        }
        return camera.description(id)
    }

    func queryMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> String? {
        camera.controls[controlID]?.menu[index]
    }

    func queryIntegerMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> Int64? {
        camera.controls[controlID]?.integerMenu[index]
    }

    func controlValue(id: UInt32) throws(SystemCallError) -> Int64 {
        if camera.isDisconnected { throw SystemCallError(call: "ioctl(VIDIOC_G_EXT_CTRLS)", errno: ENODEV) }
        guard let control = camera.controls[id] else { throw SystemCallError(call: "ioctl(VIDIOC_G_EXT_CTRLS)", errno: EINVAL) }
        if control.description.flags & V4L2ControlFlags.writeOnly.rawValue != 0 { throw SystemCallError(call: "ioctl(VIDIOC_G_EXT_CTRLS)", errno: EACCES) }
        // As the kernel does for 32-bit controls: only the low half is written.
        if control.description.type != V4L2ControlType.integer64.rawValue {
            return Int64(UInt32(bitPattern: Int32(truncatingIfNeeded: control.value)))
        }
        return control.value
    }

    // V4L2ControlNode
    func setControlValue(id: UInt32, value: Int64) throws(SystemCallError) -> Int64 {
        try camera.store(id, value, from: self)
    }

    func controlString(id: UInt32, maximumLength: Int) throws(SystemCallError) -> String {
        guard let control = camera.controls[id] else { throw SystemCallError(call: "ioctl(VIDIOC_G_EXT_CTRLS)", errno: EINVAL) }
        return control.text
    }

    func setControlString(id: UInt32, value: String) throws(SystemCallError) {
        guard camera.controls[id] != nil else { throw SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: EINVAL) }
        camera.controls[id]!.text = value
    }

    func priority() throws(SystemCallError) -> V4L2Priority { priorityValue }

    func setPriority(_ priority: V4L2Priority) throws(SystemCallError) {
        guard camera.supportsPriority else { throw SystemCallError(call: "ioctl(VIDIOC_S_PRIORITY)", errno: ENOTTY) }
        if camera.handles.contains(where: { $0 !== self && $0.priorityValue.rawValue > priorityValue.rawValue }) {
            throw SystemCallError(call: "ioctl(VIDIOC_S_PRIORITY)", errno: EBUSY)
        }
        priorityValue = priority
    }

    func subscribe(_ subscription: V4L2EventSubscription) throws(SystemCallError) {
        subscriptions.insert(subscription)
    }

    func dequeueEvent() throws(SystemCallError) -> V4L2Event? {
        if camera.isDisconnected { throw SystemCallError(call: "ioctl(VIDIOC_DQEVENT)", errno: ENODEV) }
        guard !queued.isEmpty else { return nil }
        var byte: UInt8 = 0
        _ = read(pipeEnds[0], &byte, 1)
        return queued.removeFirst()
    }

    var eventPollTarget: PollTarget { PollTarget(descriptor: pipeEnds[0], events: Int16(POLLIN)) }
}

/// Paths to fake cameras.
final class FakeControlV4L2: V4L2Interface, @unchecked Sendable {
    var cameras: [String: FakeCamera] = [:]
    /// Handles opened, newest last.
    private(set) var opened: [FakeControlHandle] = []

    init(_ cameras: [String: FakeCamera] = [:]) {
        self.cameras = cameras
    }

    func open(_ path: String, options: V4L2OpenOptions) throws(SystemCallError) -> any V4L2Node {
        guard let camera = cameras[path], !camera.isDisconnected else { throw SystemCallError(call: "open(\(path))", errno: ENOENT) }
        let handle = FakeControlHandle(camera: camera)
        opened.append(handle)
        return handle
    }
}

/// A clock that moves only when slept.
final class FakeClock: ControlClock, @unchecked Sendable {
    private(set) var time: Double = 1000
    private(set) var sleeps: [Double] = []

    func now() -> Double { time }

    func sleep(until deadline: Double) {
        sleeps.append(deadline)
        time = Swift.max(time, deadline)
    }
}

/// Cameras as drivers describe them.
enum FakeCameras {
    static let userClass: UInt32 = 0x0098_0000
    static let cameraClass: UInt32 = 0x009a_0000
    static let flashClass: UInt32 = 0x009c_0000

    /// vivid's user controls: no camera class, no flash.
    static func vivid() -> FakeCamera {
        let camera = FakeCamera()
        camera.addClass(userClass, "User Controls")
        camera.add(0x0098_0900, "Brightness", type: .integer, min: 0, max: 255, default: 128, flags: .slider)
        camera.add(0x0098_0901, "Contrast", type: .integer, min: 0, max: 255, default: 128, flags: .slider)
        camera.add(ControlID.hue, "Hue", type: .integer, min: -128, max: 128, default: 0, flags: .slider)
        camera.add(ControlID.autoGain, "Gain, Automatic", type: .boolean, min: 0, max: 1, default: 1, flags: .update)
        camera.add(ControlID.gain, "Gain", type: .integer, min: 0, max: 255, default: 100, flags: [.volatile])
        camera.inactiveWhen[ControlID.gain] = (ControlID.autoGain, 1)
        camera.add(0x0098_0914, "Horizontal Flip", type: .boolean, min: 0, max: 1, default: 0)
        camera.add(0x0098_0915, "Vertical Flip", type: .boolean, min: 0, max: 1, default: 0)
        return camera
    }

    /// A UVC-style camera with every camera-class control the features use.
    static func full(zoomMinimum: Int64 = 100, zoomMaximum: Int64 = 500, exposureMenu: [UInt32: String]? = nil) -> FakeCamera {
        let camera = vivid()
        camera.add(ControlID.autoWhiteBalance, "White Balance, Automatic", type: .boolean, default: 1, flags: .update)
        camera.add(ControlID.doWhiteBalance, "Do White Balance", type: .button, min: 0, max: 0, step: 0)
        camera.add(ControlID.whiteBalanceTemperature, "White Balance Temperature", type: .integer, min: 2800, max: 6500, step: 10, default: 4600)
        camera.inactiveWhen[ControlID.whiteBalanceTemperature] = (ControlID.autoWhiteBalance, 1)
        camera.addClass(cameraClass, "Camera Controls")
        camera.add(ControlID.exposureAuto, "Auto Exposure", type: .menu, min: 0, max: 3, default: 3,
                   menu: exposureMenu ?? [1: "Manual Mode", 3: "Aperture Priority Mode"])
        camera.add(ControlID.exposureAbsolute, "Exposure Time, Absolute", type: .integer, min: 3, max: 2047, default: 250, value: 312, flags: .volatile)
        camera.inactiveWhen[ControlID.exposureAbsolute] = (ControlID.exposureAuto, 3)
        camera.add(ControlID.exposureAutoPriority, "Exposure, Dynamic Framerate", type: .boolean, default: 0)
        camera.add(ControlID.focusAbsolute, "Focus, Absolute", type: .integer, min: 0, max: 250, step: 5, default: 0)
        camera.add(ControlID.focusAuto, "Focus, Automatic Continuous", type: .boolean, default: 1)
        camera.add(ControlID.zoomAbsolute, "Zoom, Absolute", type: .integer, min: zoomMinimum, max: zoomMaximum, default: zoomMinimum)
        camera.add(ControlID.autoExposureBias, "Auto Exposure, Bias", type: .integerMenu, min: 0, max: 4, default: 2,
                   integerMenu: [0: -2000, 1: -1000, 2: 0, 3: 1000, 4: 2000])
        camera.add(ControlID.autoFocusStart, "Auto Focus, Start", type: .button, min: 0, max: 0, step: 0)
        camera.add(ControlID.autoFocusStatus, "Auto Focus, Status", type: .bitmask, min: 0, max: 7, default: 0, flags: [.readOnly, .volatile])
        camera.add(ControlID.autoFocusRange, "Auto Focus, Range", type: .menu, min: 0, max: 3, default: 0,
                   menu: [0: "Auto", 1: "Normal", 2: "Macro", 3: "Infinity"])
        return camera
    }

    /// A camera with V4L2 flash controls (a flash LED driver's sub-device).
    static func flash(faults: Int64 = 0) -> FakeCamera {
        let camera = FakeCamera()
        camera.addClass(flashClass, "Flash Controls")
        camera.add(ControlID.flashLEDMode, "LED Mode", type: .menu, min: 0, max: 2, default: 0, menu: [0: "Off", 1: "Flash", 2: "Torch"])
        camera.add(ControlID.flashStrobeSource, "Strobe Source", type: .menu, min: 0, max: 1, default: 1, menu: [0: "Software", 1: "External"])
        camera.add(ControlID.flashStrobe, "Strobe", type: .button, min: 0, max: 0, step: 0)
        camera.add(ControlID.flashTorchIntensity, "Torch Intensity", type: .integer, min: 2500, max: 250_000, step: 2500, default: 2500)
        camera.add(ControlID.flashFault, "Faults", type: .bitmask, min: 0, max: 0x1ff, default: 0, value: faults, flags: [.readOnly, .volatile])
        return camera
    }
}

/// A private folder for lock files.
func temporaryLockDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("capctl-locks-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Controls on a fake camera at a fake path, with a fake clock and a private lock folder.
func openControls(_ camera: FakeCamera, path: String = "/dev/fake-video0", lockDirectory: String? = nil, clock: FakeClock = FakeClock()) throws -> DeviceControls {
    camera.clock = clock
    let handle = FakeControlHandle(camera: camera)
    return DeviceControls(node: handle, path: path, clock: clock, lockDirectory: try lockDirectory ?? temporaryLockDirectory())
}
