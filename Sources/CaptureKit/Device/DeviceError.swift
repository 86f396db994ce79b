/// Why a device could not be found, opened or probed. Each case names the
/// device as the user gave it and says why, in words fit for one line.
public enum DeviceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing by that path, unique ID or index exists.
    case noSuchDevice(String, reason: String)
    /// It exists but is not a capture device of the kind asked for (a
    /// regular file, an output node, a metadata node …).
    case notACaptureDevice(String, reason: String)
    /// This user may not open it; the reason says how to get access.
    case permissionDenied(String, reason: String)
    /// Another process holds it.
    case busy(String, reason: String)
    /// The device failed a call it should have answered.
    case ioFailure(String, SystemCallError)

    /// The device as the user named it.
    public var device: String {
        switch self {
        case .noSuchDevice(let device, _), .notACaptureDevice(let device, _), .permissionDenied(let device, _),
             .busy(let device, _), .ioFailure(let device, _):
            return device
        }
    }

    public var description: String {
        switch self {
        case .noSuchDevice(let device, let reason), .notACaptureDevice(let device, let reason),
             .permissionDenied(let device, let reason), .busy(let device, let reason):
            return "\(device): \(reason)"
        case .ioFailure(let device, let error):
            return "\(device): \(error)"
        }
    }
}
