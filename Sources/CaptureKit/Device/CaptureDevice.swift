#if canImport(Glibc)
import Glibc
#endif

/// A camera or microphone: the counterpart of AVCaptureDevice. Obtain
/// devices with `devices(for:)`, `default(for:)` or `init?(uniqueID:)` (the
/// virtual ones included), or from a `DeviceDiscovery`; each describes
/// itself (name, unique ID, position, access …) and answers questions about
/// what it can capture. The format a capture session uses is chosen on the
/// device under `lockForConfiguration()` (see CaptureDevice+Configuration).
public final class CaptureDevice: Sendable, CustomStringConvertible {
    /// The node or ALSA PCM name to open: `/dev/video0`, `hw:Loopback,1`, `default`.
    public let path: String
    /// An identifier that stays the same across replugging and reboots.
    public let uniqueID: String
    /// The name the driver gives the device.
    public let localizedName: String
    public let mediaType: MediaType
    /// The kernel driver (V4L2) or ALSA card driver.
    public let driver: String
    /// Where the device is attached, as the driver reports it (`usb-0000:00:14.0-1`, `platform:vivid-000`).
    public let bus: String
    /// USB `vendor:product`, when the device is on USB.
    public let modelID: String?
    public let position: DevicePosition
    /// Whether the device has a torch (a light that stays on).
    public let hasTorch: Bool
    /// Whether the device has a flash (a light fired for one frame).
    public let hasFlash: Bool
    /// Whether this process may open the device.
    package let access: DeviceAccess

    let backend: Backend

    /// The interface a device is reached through.
    enum Backend: Sendable {
        case v4l2(any V4L2Interface)
        case alsa(any ALSAInterface)
        /// Made in software (`test-pattern`, `test-tone`, `file:PATH`).
        case virtual(VirtualDevice)
    }

    /// The format chosen under `lockForConfiguration()`, and the lock.
    let configuration = Locked(DeviceConfiguration())

    /// The camera's controls (opened on first use and kept), its light and
    /// its zoom ramp, for focus, exposure, white balance, zoom and torch
    /// (see CaptureDevice+CameraSettings). Separate from `configuration`, so
    /// a change that waits (a one-shot focus) does not hold up the format.
    let cameraSettings = Locked(CameraSettingsState())

    init(path: String, uniqueID: String, localizedName: String, mediaType: MediaType, driver: String, bus: String,
         modelID: String?, position: DevicePosition, hasTorch: Bool, hasFlash: Bool, access: DeviceAccess, backend: Backend) {
        self.path = path
        self.uniqueID = uniqueID
        self.localizedName = localizedName
        self.mediaType = mediaType
        self.driver = driver
        self.bus = bus
        self.modelID = modelID
        self.position = position
        self.hasTorch = hasTorch
        self.hasFlash = hasFlash
        self.access = access
        self.backend = backend
    }

    public var description: String { "\(localizedName) (\(path))" }

    /// Every pixel format the camera offers, with its frame sizes and
    /// intervals. With `includingConversions`, the device is opened through
    /// libv4l2 and the formats it converts to are included, marked emulated.
    public func videoFormats(includingConversions: Bool = false) throws(DeviceError) -> [VideoFormat] {
        if case .virtual(let virtual) = backend { return try Self.deviceError { () throws(CaptureError) in try virtual.videoFormats() } }
        guard case .v4l2(let v4l2) = backend else { throw notOfKind(.video) }
        let probe = try V4L2Probe.open(path, interface: v4l2, options: V4L2OpenOptions(useLibv4l2: includingConversions))
        return try probe.formats()
    }

    /// The format, size and frame interval the camera is set to now.
    public func activeVideoFormat() throws(DeviceError) -> ActiveVideoFormat {
        if case .virtual(let virtual) = backend { return try Self.deviceError { () throws(CaptureError) in try virtual.activeVideoFormat() } }
        guard case .v4l2(let v4l2) = backend else { throw notOfKind(.video) }
        return try V4L2Probe.open(path, interface: v4l2, options: V4L2OpenOptions()).activeFormat()
    }


    /// The sample formats, rates and channel counts the microphone accepts.
    public func audioFormats() throws(DeviceError) -> [AudioFormat] {
        if case .virtual(let virtual) = backend { return try Self.deviceError { () throws(CaptureError) in try virtual.audioFormats() } }
        guard case .alsa(let alsa) = backend else { throw notOfKind(.audio) }
        do {
            return try alsa.captureFormats(path)
        } catch {
            throw DeviceError(openingALSA: path, error, interface: alsa)
        }
    }

    /// A virtual device's answer, its capture errors as device errors.
    private static func deviceError<T>(_ body: () throws(CaptureError) -> T) throws(DeviceError) -> T {
        do {
            return try body()
        } catch {
            switch error {
            case .device(let device): throw device
            case .io(let device, let cause): throw .ioFailure(device, cause)
            default: throw .notACaptureDevice(error.description, reason: "it cannot be read as a capture device")
            }
        }
    }

    private func notOfKind(_ kind: MediaType) -> DeviceError {
        .notACaptureDevice(path, reason: "not \(kind == .video ? "a video" : "an audio") capture device (it is \(mediaType == .video ? "a camera" : "a microphone"))")
    }
}

/// What a camera is set to now.
public struct ActiveVideoFormat: Sendable, Hashable {
    public let fourcc: FourCC
    public let dimensions: FrameDimensions
    /// Time per frame, when the driver reports it.
    public let frameInterval: Fraction?

    /// A format to choose as a device's `activeFormat`: one of its pixel
    /// formats at one of its sizes (and, optionally, frame intervals).
    public init(fourcc: FourCC, dimensions: FrameDimensions, frameInterval: Fraction? = nil) {
        self.fourcc = fourcc
        self.dimensions = dimensions
        self.frameInterval = frameInterval
    }
}

extension DeviceError {
    /// The error for a failed open or probe of `device`, by errno.
    init(opening device: String, _ error: SystemCallError, kind: String) {
        switch error.errno {
        case ENOENT, ENODEV, ENXIO:
            self = .noSuchDevice(device, reason: "no such \(kind)")
        case EACCES, EPERM:
            self = .permissionDenied(device, reason: device.hasPrefix("/") ? AccessCheck.deniedReason(path: device) : "permission denied")
        case EBUSY:
            self = .busy(device, reason: "device is busy: another process is using it")
        case ENOTTY where error.call.contains("QUERYCAP"), EINVAL where error.call.contains("QUERYCAP"):
            self = .notACaptureDevice(device, reason: "not a V4L2 device")
        default:
            self = .ioFailure(device, error)
        }
    }
}
