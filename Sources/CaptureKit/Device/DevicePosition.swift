/// Where a camera sits relative to the system's screen, as the driver
/// reports it through `V4L2_CID_CAMERA_ORIENTATION`.
public enum DevicePosition: String, Sendable, Codable {
    case front
    case back
    case external
    /// The driver does not say (the control is absent), or the device is not a camera.
    case unspecified
}
