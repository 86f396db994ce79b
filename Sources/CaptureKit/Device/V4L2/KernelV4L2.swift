import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// The real V4L2 interface: ioctls on device nodes, directly or through libv4l2.
struct KernelV4L2: V4L2Interface {
    init() {}

    func open(_ path: String, options: V4L2OpenOptions) throws(SystemCallError) -> any V4L2Node {
        KernelV4L2Node(path: path, descriptor: try V4L2Descriptor.open(path, throughLibv4l2: options.useLibv4l2))
    }
}

/// An open node, for probing, configuration and streaming alike; every
/// request goes through its descriptor's `request(_:_:_:)`, which retries
/// EINTR and names the ioctl in any error. Closes when released, or at
/// `close()`.
final class KernelV4L2Node: V4L2Node, Sendable {
    let path: String
    let descriptor: V4L2Descriptor

    private struct State {
        /// Capture buffer type of this node, multi-planar or not, known after QUERYCAP.
        var captureBufferType = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        var isOpen = true
    }
    private let state = Locked(State())

    init(path: String, descriptor: V4L2Descriptor) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close() }

    var fd: Int32 { descriptor.fd }
    var throughLibv4l2: Bool { descriptor.throughLibv4l2 }
    private var captureBufferType: UInt32 { state.withLock { $0.captureBufferType } }

    /// Closes the descriptor; later requests fail with EBADF.
    func close() {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.isOpen = false }
            return state.isOpen
        }
        if wasOpen { descriptor.close() }
    }

    /// Issues one ioctl, retrying EINTR; EBADF once the node was closed (its
    /// descriptor number may belong to another file by then).
    func request<T>(_ name: String, _ number: UInt, _ argument: inout T) throws(SystemCallError) {
        guard state.withLock({ $0.isOpen }) else { throw SystemCallError(call: "ioctl(\(name))", errno: EBADF) }
        try descriptor.request(name, number, &argument)
    }

    /// Like `request`, but an index past the end (EINVAL) answers false.
    func enumerate<T>(_ name: String, _ number: UInt, _ argument: inout T) throws(SystemCallError) -> Bool {
        do {
            try request(name, number, &argument)
            return true
        } catch where error.errno == EINVAL {
            return false
        }
    }

    /// One VIDIOC_G/S_EXT_CTRLS request for one control of any class.
    func extendedControls(_ name: String, _ number: UInt, _ control: inout v4l2_ext_control) throws(SystemCallError) {
        guard state.withLock({ $0.isOpen }) else { throw SystemCallError(call: "ioctl(\(name))", errno: EBADF) }
        try descriptor.extendedControls(name, number, &control)
    }

    func queryCapability() throws(SystemCallError) -> V4L2Capability {
        var cap = v4l2_capability()
        try request("VIDIOC_QUERYCAP", cv4l2_VIDIOC_QUERYCAP, &cap)
        let reply = V4L2Capability(
            driver: cString(cap.driver), card: cString(cap.card), busInfo: cString(cap.bus_info),
            version: cap.version, capabilities: cap.capabilities, deviceCaps: cap.device_caps)
        if reply.nodeCapabilities & V4L2Capability.videoCapture == 0,
           reply.nodeCapabilities & V4L2Capability.videoCaptureMultiplanar != 0 {
            state.withLock { $0.captureBufferType = V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue }
        }
        return reply
    }

    func enumerateFormat(index: UInt32) throws(SystemCallError) -> V4L2FormatDescription? {
        var desc = v4l2_fmtdesc()
        desc.index = index
        desc.type = captureBufferType
        guard try enumerate("VIDIOC_ENUM_FMT", cv4l2_VIDIOC_ENUM_FMT, &desc) else { return nil }
        return V4L2FormatDescription(pixelFormat: desc.pixelformat, flags: desc.flags, description: cString(desc.description))
    }

    func enumerateFrameSize(pixelFormat: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameSizeReply? {
        var size = v4l2_frmsizeenum()
        size.index = index
        size.pixel_format = pixelFormat
        guard try enumerate("VIDIOC_ENUM_FRAMESIZES", cv4l2_VIDIOC_ENUM_FRAMESIZES, &size) else { return nil }
        switch size.type {
        case V4L2_FRMSIZE_TYPE_DISCRETE.rawValue:
            return .discrete(width: size.discrete.width, height: size.discrete.height)
        default:
            let range = size.stepwise
            let min = FrameDimensions(width: range.min_width, height: range.min_height)
            let max = FrameDimensions(width: range.max_width, height: range.max_height)
            if size.type == V4L2_FRMSIZE_TYPE_CONTINUOUS.rawValue {
                return .continuous(min: min, max: max)
            }
            return .stepwise(min: min, max: max, step: FrameDimensions(width: range.step_width, height: range.step_height))
        }
    }

    func enumerateFrameInterval(pixelFormat: UInt32, width: UInt32, height: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameIntervalReply? {
        var interval = v4l2_frmivalenum()
        interval.index = index
        interval.pixel_format = pixelFormat
        interval.width = width
        interval.height = height
        guard try enumerate("VIDIOC_ENUM_FRAMEINTERVALS", cv4l2_VIDIOC_ENUM_FRAMEINTERVALS, &interval) else { return nil }
        switch interval.type {
        case V4L2_FRMIVAL_TYPE_DISCRETE.rawValue:
            return .discrete(fraction(interval.discrete))
        case V4L2_FRMIVAL_TYPE_CONTINUOUS.rawValue:
            return .continuous(min: fraction(interval.stepwise.min), max: fraction(interval.stepwise.max))
        default:
            return .stepwise(min: fraction(interval.stepwise.min), max: fraction(interval.stepwise.max), step: fraction(interval.stepwise.step))
        }
    }

    func queryControl(id: UInt32) throws(SystemCallError) -> V4L2ControlDescription? {
        var query = v4l2_query_ext_ctrl()
        query.id = id
        guard try enumerate("VIDIOC_QUERY_EXT_CTRL", cv4l2_VIDIOC_QUERY_EXT_CTRL, &query) else { return nil }
        return V4L2ControlDescription(
            id: query.id, type: query.type, name: cString(query.name), minimum: query.minimum,
            maximum: query.maximum, step: query.step, defaultValue: query.default_value, flags: query.flags)
    }

    func queryMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> String? {
        var item = v4l2_querymenu()
        item.id = controlID
        item.index = index
        guard try enumerate("VIDIOC_QUERYMENU", cv4l2_VIDIOC_QUERYMENU, &item) else { return nil }
        return cString(item.name)
    }

    func controlValue(id: UInt32) throws(SystemCallError) -> Int64 {
        var control = v4l2_ext_control()
        control.id = id
        try extendedControls("VIDIOC_G_EXT_CTRLS", cv4l2_VIDIOC_G_EXT_CTRLS, &control)
        return control.value64
    }

    func currentFormat() throws(SystemCallError) -> V4L2CurrentFormat {
        var format = v4l2_format()
        format.type = captureBufferType
        try request("VIDIOC_G_FMT", cv4l2_VIDIOC_G_FMT, &format)
        if captureBufferType == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue {
            let planar = format.fmt.pix_mp
            return V4L2CurrentFormat(pixelFormat: planar.pixelformat, width: planar.width, height: planar.height)
        }
        let pix = format.fmt.pix
        return V4L2CurrentFormat(pixelFormat: pix.pixelformat, width: pix.width, height: pix.height)
    }

    func currentFrameInterval() throws(SystemCallError) -> Fraction? {
        var parameters = v4l2_streamparm()
        parameters.type = captureBufferType
        try request("VIDIOC_G_PARM", cv4l2_VIDIOC_G_PARM, &parameters)
        let capture = parameters.parm.capture
        guard capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0, capture.timeperframe.denominator != 0 else { return nil }
        return fraction(capture.timeperframe)
    }
}

private func fraction(_ value: v4l2_fract) -> Fraction {
    Fraction(value.numerator, value.denominator)
}

/// The text of a fixed-size, NUL-padded C character array imported as a tuple.
func cString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        let bytes = raw.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }
}
