extension CaptureDevice {
    /// The kinds of capture device: AVCaptureDevice.DeviceType on Linux's ground.
    ///
    /// Differs from AVFoundation on purpose: Linux does not say what lens a
    /// camera has (no ultra-wide, telephoto, dual or TrueDepth types), only
    /// where it is attached. So a camera on USB is `.external` (as
    /// AVFoundation's `.external` is a UVC camera), every other camera
    /// (platform, PCI, MIPI CSI: built into the machine) is
    /// `.builtInWideAngleCamera`, and `.virtual` is a capture device made in
    /// software (the test pattern and tone, a file), which AVFoundation does
    /// not have. Every microphone, USB ones too, is `.microphone`, as in
    /// AVFoundation since macOS 14.
    public enum DeviceType: String, Sendable, CaseIterable, Codable {
        case builtInWideAngleCamera
        case external
        case microphone
        case virtual
    }

    /// The kind of this device, from its backend, its bus (`usb-…`), its USB
    /// model ID and its position (`.external`).
    public var deviceType: DeviceType {
        if virtualDevice != nil { return .virtual }
        if mediaType == .audio { return .microphone }
        if bus.hasPrefix("usb") || modelID != nil || position == .external { return .external }
        return .builtInWideAngleCamera
    }

    /// Finds devices by type, media type and position, as
    /// AVCaptureDevice.DiscoverySession does.
    ///
    /// Differs from AVFoundation on purpose: `devices` is looked up afresh
    /// each time it is read (Linux has no key-value observing; watch
    /// `DeviceMonitor` for devices coming and going); the media type may be
    /// nil for every kind; and the lookup goes through a `DeviceDiscovery`,
    /// which tests point at a fake system.
    public final class DiscoverySession: Sendable {
        public let deviceTypes: [DeviceType]
        /// nil: cameras and microphones alike.
        public let mediaType: MediaType?
        /// `.unspecified`: any position, as in AVFoundation.
        public let position: DevicePosition
        let discovery: DeviceDiscovery

        public init(deviceTypes: [DeviceType], mediaType: MediaType?, position: DevicePosition,
                    discovery: DeviceDiscovery = DeviceDiscovery()) {
            self.deviceTypes = deviceTypes
            self.mediaType = mediaType
            self.position = position
            self.discovery = discovery
        }

        /// The devices present now that match, in `CaptureDevice.devices(for:)`
        /// order (cameras before microphones; virtual devices last).
        public var devices: [CaptureDevice] {
            let kinds: [MediaType] = mediaType.map { [$0] } ?? [.video, .audio]
            return kinds.flatMap { CaptureDevice.devices(for: $0, discovery: discovery) }.filter { device in
                deviceTypes.contains(device.deviceType) && (position == .unspecified || device.position == position)
            }
        }
    }
}
