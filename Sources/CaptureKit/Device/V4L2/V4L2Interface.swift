/// The seam between CaptureKit and the V4L2 kernel interface. Everything
/// above it is plain logic over these replies, so tests can replay a
/// recorded device through a fake; `KernelV4L2` is the real implementation.
protocol V4L2Interface: Sendable {
    /// Opens a device node for querying. Throws the `open` call's error.
    func open(_ path: String, options: V4L2OpenOptions) throws(SystemCallError) -> any V4L2Node
}

/// How to open a node.
struct V4L2OpenOptions: Sendable, Hashable {
    /// Route requests through libv4l2, which adds formats it can convert to.
    var useLibv4l2: Bool

    init(useLibv4l2: Bool = false) {
        self.useLibv4l2 = useLibv4l2
    }
}

/// An open V4L2 node. Each method is one ioctl; the node closes when released.
/// Enumerations return nil past their last index (the kernel's EINVAL).
protocol V4L2Node: AnyObject {
    /// VIDIOC_QUERYCAP.
    func queryCapability() throws(SystemCallError) -> V4L2Capability
    /// VIDIOC_ENUM_FMT for capture buffers.
    func enumerateFormat(index: UInt32) throws(SystemCallError) -> V4L2FormatDescription?
    /// VIDIOC_ENUM_FRAMESIZES.
    func enumerateFrameSize(pixelFormat: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameSizeReply?
    /// VIDIOC_ENUM_FRAMEINTERVALS.
    func enumerateFrameInterval(pixelFormat: UInt32, width: UInt32, height: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameIntervalReply?
    /// VIDIOC_QUERY_EXT_CTRL; nil when the device has no such control.
    func queryControl(id: UInt32) throws(SystemCallError) -> V4L2ControlDescription?
    /// VIDIOC_QUERYMENU; nil for an index the menu skips.
    func queryMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> String?
    /// VIDIOC_G_EXT_CTRLS for one integer, boolean or menu control.
    func controlValue(id: UInt32) throws(SystemCallError) -> Int64
    /// VIDIOC_G_FMT for capture buffers.
    func currentFormat() throws(SystemCallError) -> V4L2CurrentFormat
    /// VIDIOC_G_PARM: the time per frame, or nil when the driver does not say.
    func currentFrameInterval() throws(SystemCallError) -> Fraction?
}

/// The reply to VIDIOC_QUERYCAP.
struct V4L2Capability: Sendable, Hashable {
    var driver: String
    var card: String
    var busInfo: String
    var version: UInt32
    /// Capabilities of the whole physical device.
    var capabilities: UInt32
    /// Capabilities of this node, when the driver reports them (V4L2_CAP_DEVICE_CAPS).
    var deviceCaps: UInt32

    init(driver: String, card: String, busInfo: String, version: UInt32 = 0, capabilities: UInt32, deviceCaps: UInt32) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.version = version
        self.capabilities = capabilities
        self.deviceCaps = deviceCaps
    }

    static let videoCapture: UInt32 = 0x0000_0001
    static let videoCaptureMultiplanar: UInt32 = 0x0000_1000
    static let hasDeviceCaps: UInt32 = 0x8000_0000
    /// V4L2_CAP_STREAMING: the node streams into buffers (memory-mapped, user pointer or DMABUF).
    static let streaming: UInt32 = 0x0400_0000

    /// The capabilities of this node: `deviceCaps` where the driver fills it in, else the device's.
    var nodeCapabilities: UInt32 {
        capabilities & V4L2Capability.hasDeviceCaps != 0 ? deviceCaps : capabilities
    }

    /// Whether this node captures video (single- or multi-planar).
    var isVideoCapture: Bool {
        nodeCapabilities & (V4L2Capability.videoCapture | V4L2Capability.videoCaptureMultiplanar) != 0
    }

    /// What kind of node this is, in words for messages ("video output",
    /// "metadata capture"); modifiers such as tuner or streaming are left out.
    var capabilityNames: [String] {
        let names: [(UInt32, String)] = [
            (0x0000_0001, "video capture"), (0x0000_1000, "video capture (multi-planar)"),
            (0x0000_0002, "video output"), (0x0000_2000, "video output (multi-planar)"),
            (0x0000_8000, "memory-to-memory"), (0x0000_4000, "memory-to-memory (multi-planar)"),
            (0x0000_0004, "video overlay"), (0x0000_0010, "VBI capture"), (0x0000_0020, "VBI output"),
            (0x0004_0000, "radio"), (0x0010_0000, "SDR capture"),
            (0x0040_0000, "SDR output"), (0x0080_0000, "metadata capture"), (0x0800_0000, "metadata output"),
            (0x1000_0000, "touch device"),
        ]
        return names.filter { nodeCapabilities & $0.0 != 0 }.map(\.1)
    }
}

/// The reply to VIDIOC_ENUM_FMT.
struct V4L2FormatDescription: Sendable, Hashable {
    var pixelFormat: UInt32
    var flags: UInt32
    var description: String

    init(pixelFormat: UInt32, flags: UInt32, description: String) {
        self.pixelFormat = pixelFormat
        self.flags = flags
        self.description = description
    }

    static let compressedFlag: UInt32 = 0x0001
    static let emulatedFlag: UInt32 = 0x0002
}

/// The reply to VIDIOC_ENUM_FRAMESIZES.
enum V4L2FrameSizeReply: Sendable, Hashable {
    case discrete(width: UInt32, height: UInt32)
    case continuous(min: FrameDimensions, max: FrameDimensions)
    case stepwise(min: FrameDimensions, max: FrameDimensions, step: FrameDimensions)
}

/// The reply to VIDIOC_ENUM_FRAMEINTERVALS.
enum V4L2FrameIntervalReply: Sendable, Hashable {
    case discrete(Fraction)
    case continuous(min: Fraction, max: Fraction)
    case stepwise(min: Fraction, max: Fraction, step: Fraction)
}

/// The reply to VIDIOC_QUERY_EXT_CTRL.
struct V4L2ControlDescription: Sendable, Hashable {
    var id: UInt32
    var type: UInt32
    var name: String
    var minimum: Int64
    var maximum: Int64
    var step: UInt64
    var defaultValue: Int64
    var flags: UInt32

    init(id: UInt32, type: UInt32, name: String, minimum: Int64, maximum: Int64, step: UInt64, defaultValue: Int64, flags: UInt32) {
        self.id = id
        self.type = type
        self.name = name
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.flags = flags
    }

    /// V4L2_CTRL_FLAG_DISABLED: the control is there but permanently unusable.
    var isDisabled: Bool { flags & 0x0001 != 0 }
}

/// The reply to VIDIOC_G_FMT for capture buffers.
struct V4L2CurrentFormat: Sendable, Hashable {
    var pixelFormat: UInt32
    var width: UInt32
    var height: UInt32

    init(pixelFormat: UInt32, width: UInt32, height: UInt32) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
    }
}
