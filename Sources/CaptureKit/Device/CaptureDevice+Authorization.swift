/// Whether this program may capture a kind of media: AVAuthorizationStatus.
///
/// Differs from AVFoundation on purpose: Linux has no privacy prompt and no
/// parental restriction. Access is the permission to open the device nodes
/// (/dev/video*, /dev/snd/*), usually membership of the `video` or `audio`
/// group, so the answer is always known: never `.notDetermined` or
/// `.restricted` (kept for ported code that switches over them), only
/// `.authorized` or `.denied`.
public enum AuthorizationStatus: Int, Sendable, Hashable, CustomStringConvertible {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case authorized = 3

    public var description: String {
        switch self {
        case .notDetermined: return "notDetermined"
        case .restricted: return "restricted"
        case .denied: return "denied"
        case .authorized: return "authorized"
        }
    }
}

/// A device this process may not open, and why (with how to get access:
/// "user 'ann' is not in group 'video'; add it with …").
///
/// AVFoundation has no such type: on Linux the reason is known per device
/// and worth saying.
public struct AccessProblem: Sendable, CustomStringConvertible {
    public let device: CaptureDevice
    public let reason: String

    public var description: String { "\(device.path): \(reason)" }
}

extension CaptureDevice {
    /// Whether this process may capture `mediaType`:
    /// - `.authorized` when at least one real device of that kind can be
    ///   opened, or when there is no real device of that kind at all (the
    ///   virtual test pattern or tone is then what `default(for:)` gives, and
    ///   it is always usable);
    /// - `.denied` when real devices of that kind exist and none can be
    ///   opened: `accessProblems(for:)` says why. The virtual devices do not
    ///   make this authorized: a program asking for the camera wants the real one.
    public static func authorizationStatus(for mediaType: MediaType, discovery: DeviceDiscovery = DeviceDiscovery()) -> AuthorizationStatus {
        let hardware = hardwareDevices(for: mediaType, discovery: discovery)
        if hardware.isEmpty || hardware.contains(where: { $0.access.isAuthorized }) { return .authorized }
        return .denied
    }

    /// The real devices of `mediaType` this process may not open, each with the reason.
    public static func accessProblems(for mediaType: MediaType, discovery: DeviceDiscovery = DeviceDiscovery()) -> [AccessProblem] {
        hardwareDevices(for: mediaType, discovery: discovery).compactMap { device in
            guard case .denied(let reason) = device.access else { return nil }
            return AccessProblem(device: device, reason: reason)
        }
    }

    /// Calls `completionHandler` with whether access to `mediaType` is
    /// granted (`authorizationStatus(for:) == .authorized`), on a background
    /// thread, as AVFoundation does.
    ///
    /// Differs from AVFoundation on purpose: Linux cannot prompt; nothing is
    /// asked of the user and nothing changes. Access is granted by the system
    /// administrator (group membership, udev rules); `accessProblems(for:)`
    /// says what to change.
    public static func requestAccess(for mediaType: MediaType, discovery: DeviceDiscovery = DeviceDiscovery(),
                                     completionHandler: @escaping @Sendable (Bool) -> Void) {
        _ = CaptureThread(name: "request access") {
            completionHandler(authorizationStatus(for: mediaType, discovery: discovery) == .authorized)
        }
    }

    /// The real devices of a kind: discovery's, less ALSA's `default`, which
    /// only stands for the others.
    private static func hardwareDevices(for mediaType: MediaType, discovery: DeviceDiscovery) -> [CaptureDevice] {
        discovery.devices(for: mediaType).filter { $0.uniqueID != UniqueID.audioDefaultID }
    }
}
