#if canImport(Glibc)
import Glibc
#endif

/// Questions asked of one open V4L2 node: what it is, what formats it
/// offers and what it is set to. Errors name the node as the user gave it.
struct V4L2Probe {
    let path: String
    let node: any V4L2Node
    let capability: V4L2Capability

    /// Opens `path` and asks VIDIOC_QUERYCAP; a node that does not answer it
    /// is not a V4L2 device.
    static func open(_ path: String, interface: any V4L2Interface, options: V4L2OpenOptions) throws(DeviceError) -> V4L2Probe {
        let node: any V4L2Node
        do {
            node = try interface.open(path, options: options)
        } catch {
            throw DeviceError(opening: path, error, kind: "video device")
        }
        do {
            return V4L2Probe(path: path, node: node, capability: try node.queryCapability())
        } catch {
            throw DeviceError(opening: path, error, kind: "video device")
        }
    }

    /// Throws unless the node captures video, saying what it is instead.
    func requireVideoCapture() throws(DeviceError) {
        guard !capability.isVideoCapture else { return }
        let what = capability.capabilityNames.first.map { "it is a \($0) node" } ?? "it has no capture capability"
        throw .notACaptureDevice(path, reason: "not a video capture device: \(what) of '\(capability.card)'")
    }

    /// VIDIOC_ENUM_FMT, then the sizes and intervals of each format.
    func formats() throws(DeviceError) -> [VideoFormat] {
        try requireVideoCapture()
        var formats: [VideoFormat] = []
        var index: UInt32 = 0
        while let description = try ask({ () throws(SystemCallError) in try node.enumerateFormat(index: index) }) {
            formats.append(VideoFormat(
                fourcc: FourCC(code: description.pixelFormat),
                description: description.description,
                isCompressed: description.flags & V4L2FormatDescription.compressedFlag != 0,
                isEmulated: description.flags & V4L2FormatDescription.emulatedFlag != 0,
                sizes: try sizes(of: description.pixelFormat)))
            index += 1
        }
        return formats
    }

    private func sizes(of pixelFormat: UInt32) throws(DeviceError) -> [FrameSizeRange] {
        var sizes: [FrameSizeRange] = []
        var index: UInt32 = 0
        while let reply = try askOptional({ () throws(SystemCallError) in try node.enumerateFrameSize(pixelFormat: pixelFormat, index: index) }) {
            switch reply {
            case .discrete(let width, let height):
                sizes.append(.discrete(FrameDimensions(width: width, height: height),
                                       intervals: try intervals(pixelFormat, width, height)))
            case .stepwise(let min, let max, let step):
                // A stepwise or continuous range is reported once, with the
                // driver's intervals for its largest size.
                sizes.append(.stepwise(min: min, max: max, step: step, intervals: try intervals(pixelFormat, max.width, max.height)))
            case .continuous(let min, let max):
                sizes.append(.continuous(min: min, max: max, intervals: try intervals(pixelFormat, max.width, max.height)))
            }
            // Only discrete sizes have further indices.
            guard case .discrete = reply else { break }
            index += 1
        }
        return sizes
    }

    private func intervals(_ pixelFormat: UInt32, _ width: UInt32, _ height: UInt32) throws(DeviceError) -> FrameIntervalRange {
        var discrete: [Fraction] = []
        var index: UInt32 = 0
        while let reply = try askOptional({ () throws(SystemCallError) in
            try node.enumerateFrameInterval(pixelFormat: pixelFormat, width: width, height: height, index: index)
        }) {
            switch reply {
            case .discrete(let interval):
                discrete.append(interval)
                index += 1
            case .stepwise(let min, let max, let step):
                return .stepwise(min: min, max: max, step: step)
            case .continuous(let min, let max):
                return .continuous(min: min, max: max)
            }
        }
        return discrete.isEmpty ? .unknown : .discrete(discrete)
    }

    /// VIDIOC_G_FMT and VIDIOC_G_PARM.
    func activeFormat() throws(DeviceError) -> ActiveVideoFormat {
        try requireVideoCapture()
        let format = try ask { () throws(SystemCallError) in try node.currentFormat() }
        // Drivers without VIDIOC_G_PARM (ENOTTY) simply do not report an interval.
        let interval = try askOptional { () throws(SystemCallError) in try node.currentFrameInterval() }
        return ActiveVideoFormat(
            fourcc: FourCC(code: format.pixelFormat),
            dimensions: FrameDimensions(width: format.width, height: format.height),
            frameInterval: interval)
    }

    /// The position the driver reports through V4L2_CID_CAMERA_ORIENTATION.
    func position() -> DevicePosition {
        guard let control = try? node.queryControl(id: V4L2ControlID.cameraOrientation), !control.isDisabled,
              let value = try? node.controlValue(id: V4L2ControlID.cameraOrientation) else { return .unspecified }
        switch value {
        case 0: return .front
        case 1: return .back
        case 2: return .external
        default: return .unspecified
        }
    }

    /// Runs one request, turning its error into a DeviceError for this node.
    private func ask<T>(_ body: () throws(SystemCallError) -> T) throws(DeviceError) -> T {
        do {
            return try body()
        } catch {
            throw DeviceError(opening: path, error, kind: "video device")
        }
    }

    /// Like `ask`, for requests a driver may not implement at all (ENOTTY):
    /// those answer nil, as if there were nothing to enumerate.
    private func askOptional<T>(_ body: () throws(SystemCallError) -> T?) throws(DeviceError) -> T? {
        do {
            return try body()
        } catch where error.errno == ENOTTY {
            return nil
        } catch {
            throw DeviceError(opening: path, error, kind: "video device")
        }
    }
}

/// Control IDs CaptureKit reads during discovery.
enum V4L2ControlID {
    /// V4L2_CID_CAMERA_ORIENTATION (camera class base 0x009a0900 + 34).
    static let cameraOrientation: UInt32 = 0x009a_0922
    /// V4L2_CID_FLASH_LED_MODE (flash class base 0x009c0900 + 1).
    static let flashLEDMode: UInt32 = 0x009c_0901
    /// V4L2_CID_FLASH_STROBE (flash class base + 3).
    static let flashStrobe: UInt32 = 0x009c_0903
}
