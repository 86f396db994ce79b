#if canImport(Glibc)
import Glibc
#endif

/// The part of the V4L2 seam that changes a device rather than asking it:
/// setting controls, the file-handle priority behind the configuration lock,
/// and events. `KernelV4L2Node` implements it; tests use a fake.
protocol V4L2ControlNode: V4L2Node {
    /// VIDIOC_S_EXT_CTRLS for one integer, boolean, menu, button, bitmask or
    /// 64-bit integer control. Answers the value the driver stored, which
    /// may differ from the one asked for (drivers round to the step).
    func setControlValue(id: UInt32, value: Int64) throws(SystemCallError) -> Int64
    /// VIDIOC_G_EXT_CTRLS for a string control, whose longest value is `maximumLength` bytes.
    func controlString(id: UInt32, maximumLength: Int) throws(SystemCallError) -> String
    /// VIDIOC_S_EXT_CTRLS for a string control.
    func setControlString(id: UInt32, value: String) throws(SystemCallError)
    /// VIDIOC_QUERYMENU for an integer menu: the entry's value, or nil for
    /// an index the menu skips.
    func queryIntegerMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> Int64?
    /// VIDIOC_G_PRIORITY: this file handle's priority.
    func priority() throws(SystemCallError) -> V4L2Priority
    /// VIDIOC_S_PRIORITY. Raising it to `.record` fails with EBUSY while
    /// another file handle holds `.record`; once raised, other file handles
    /// cannot change controls or formats (EBUSY) until it is lowered or closed.
    func setPriority(_ priority: V4L2Priority) throws(SystemCallError)
    /// VIDIOC_SUBSCRIBE_EVENT.
    func subscribe(_ subscription: V4L2EventSubscription) throws(SystemCallError)
    /// VIDIOC_DQEVENT; nil when no event is pending.
    func dequeueEvent() throws(SystemCallError) -> V4L2Event?
    /// What to poll(2) for to learn that an event is pending: the node's
    /// descriptor and POLLPRI for a kernel node. POLLHUP or POLLERR there
    /// means the device is gone.
    var eventPollTarget: PollTarget { get }
}

/// A descriptor and the poll(2) events that mean "ready".
struct PollTarget: Sendable, Hashable {
    var descriptor: Int32
    var events: Int16

    init(descriptor: Int32, events: Int16) {
        self.descriptor = descriptor
        self.events = events
    }
}

/// V4L2 file-handle priorities (enum v4l2_priority).
enum V4L2Priority: UInt32, Sendable, CaseIterable {
    case unset = 0
    case background = 1
    /// The priority every file handle starts with.
    case interactive = 2
    /// Exclusive: other file handles may only read.
    case record = 3
}

/// What to subscribe to with VIDIOC_SUBSCRIBE_EVENT.
struct V4L2EventSubscription: Sendable, Hashable {
    var type: UInt32
    /// The control ID for control events; the input for source changes.
    var id: UInt32
    var flags: UInt32

    init(type: UInt32, id: UInt32, flags: UInt32 = 0) {
        self.type = type
        self.id = id
        self.flags = flags
    }

    /// V4L2_EVENT_CTRL: value, flags or range changes of one control.
    static let controlType: UInt32 = 3
    /// V4L2_EVENT_SOURCE_CHANGE: the input's resolution or signal changed.
    static let sourceChangeType: UInt32 = 5
    /// V4L2_EVENT_SUB_FL_SEND_INITIAL: queue an event with the current state at once.
    static let sendInitialFlag: UInt32 = 1

    static func control(_ id: UInt32, sendInitial: Bool = false) -> V4L2EventSubscription {
        V4L2EventSubscription(type: controlType, id: id, flags: sendInitial ? sendInitialFlag : 0)
    }

    static func sourceChange(input: UInt32 = 0) -> V4L2EventSubscription {
        V4L2EventSubscription(type: sourceChangeType, id: input)
    }
}

/// A dequeued V4L2 event.
enum V4L2Event: Sendable, Hashable {
    /// A control changed: `changes` holds V4L2_EVENT_CTRL_CH_VALUE (1),
    /// _FLAGS (2) and _RANGE (4); value and flags are the new ones.
    case control(id: UInt32, changes: UInt32, value: Int64, flags: UInt32, minimum: Int64, maximum: Int64, step: Int64, defaultValue: Int64)
    /// The input changed; `changes` holds V4L2_EVENT_SRC_CH_RESOLUTION (1).
    case sourceChange(input: UInt32, changes: UInt32)
    /// Any other event type.
    case other(type: UInt32, id: UInt32)

    static let valueChanged: UInt32 = 1
    static let flagsChanged: UInt32 = 2
    static let rangeChanged: UInt32 = 4
    static let resolutionChanged: UInt32 = 1
}

/// Opens a node for configuration through any V4L2 interface. Interfaces
/// whose nodes cannot set controls answer ENOTTY, as a driver without the
/// request would.
func openControlNode(_ interface: any V4L2Interface, path: String, options: V4L2OpenOptions = V4L2OpenOptions()) throws(SystemCallError) -> any V4L2ControlNode {
    let node = try interface.open(path, options: options)
    guard let controlNode = node as? any V4L2ControlNode else {
        throw SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: ENOTTY)
    }
    return controlNode
}
