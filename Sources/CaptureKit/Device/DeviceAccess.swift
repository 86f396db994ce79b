/// Whether this process may use a device: the Linux counterpart of an
/// authorization status. Access to a capture device on Linux is a matter of
/// file permissions, usually membership of the `video` or `audio` group.
package enum DeviceAccess: Sendable, Equatable {
    case authorized
    /// The device node cannot be opened; `reason` says why and how to fix it.
    case denied(reason: String)

    package var isAuthorized: Bool { self == .authorized }
}
