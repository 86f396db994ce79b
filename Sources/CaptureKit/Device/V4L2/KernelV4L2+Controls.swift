import CV4L2
#if canImport(Glibc)
import Glibc
#endif

extension KernelV4L2Node: V4L2ControlNode {
    func setControlValue(id: UInt32, value: Int64) throws(SystemCallError) -> Int64 {
        var control = v4l2_ext_control()
        control.id = id
        // 32-bit controls read `value`, which shares the low bytes of `value64`.
        control.value64 = value
        try extendedControls("VIDIOC_S_EXT_CTRLS", cv4l2_VIDIOC_S_EXT_CTRLS, &control)
        return control.value64
    }

    func controlString(id: UInt32, maximumLength: Int) throws(SystemCallError) -> String {
        var buffer = [CChar](repeating: 0, count: max(maximumLength, 0) + 1)
        let size = UInt32(buffer.count)
        try buffer.withUnsafeMutableBufferPointer { (pointer) throws(SystemCallError) in
            var control = v4l2_ext_control()
            control.id = id
            control.size = size
            control.string = pointer.baseAddress
            try extendedControls("VIDIOC_G_EXT_CTRLS", cv4l2_VIDIOC_G_EXT_CTRLS, &control)
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func setControlString(id: UInt32, value: String) throws(SystemCallError) {
        var buffer = Array(value.utf8CString)
        let size = UInt32(buffer.count)
        try buffer.withUnsafeMutableBufferPointer { (pointer) throws(SystemCallError) in
            var control = v4l2_ext_control()
            control.id = id
            control.size = size
            control.string = pointer.baseAddress
            try extendedControls("VIDIOC_S_EXT_CTRLS", cv4l2_VIDIOC_S_EXT_CTRLS, &control)
        }
    }

    func queryIntegerMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> Int64? {
        var item = v4l2_querymenu()
        item.id = controlID
        item.index = index
        guard try enumerate("VIDIOC_QUERYMENU", cv4l2_VIDIOC_QUERYMENU, &item) else { return nil }
        return item.value
    }

    func priority() throws(SystemCallError) -> V4L2Priority {
        var value: UInt32 = 0
        try request("VIDIOC_G_PRIORITY", cv4l2_VIDIOC_G_PRIORITY, &value)
        return V4L2Priority(rawValue: value) ?? .unset
    }

    func setPriority(_ priority: V4L2Priority) throws(SystemCallError) {
        var value = priority.rawValue
        try request("VIDIOC_S_PRIORITY", cv4l2_VIDIOC_S_PRIORITY, &value)
    }

    func subscribe(_ subscription: V4L2EventSubscription) throws(SystemCallError) {
        var argument = v4l2_event_subscription()
        argument.type = subscription.type
        argument.id = subscription.id
        argument.flags = subscription.flags
        try request("VIDIOC_SUBSCRIBE_EVENT", cv4l2_VIDIOC_SUBSCRIBE_EVENT, &argument)
    }

    func dequeueEvent() throws(SystemCallError) -> V4L2Event? {
        var event = v4l2_event()
        do {
            try request("VIDIOC_DQEVENT", cv4l2_VIDIOC_DQEVENT, &event)
        } catch where error.errno == ENOENT {
            return nil
        }
        switch event.type {
        case V4L2EventSubscription.controlType:
            let control = event.u.ctrl
            // 64-bit controls fill value64; all others the 32-bit value.
            let value = control.type == V4L2ControlType.integer64.rawValue ? control.value64 : Int64(control.value)
            return .control(
                id: event.id, changes: control.changes, value: value, flags: control.flags,
                minimum: Int64(control.minimum), maximum: Int64(control.maximum),
                step: Int64(control.step), defaultValue: Int64(control.default_value))
        case V4L2EventSubscription.sourceChangeType:
            return .sourceChange(input: event.id, changes: event.u.src_change.changes)
        default:
            return .other(type: event.type, id: event.id)
        }
    }

    var eventPollTarget: PollTarget {
        PollTarget(descriptor: fd, events: Int16(POLLPRI))
    }
}
