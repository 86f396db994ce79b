/// What was chosen on a device under its configuration lock.
struct DeviceConfiguration {
    /// The advisory lock of a V4L2 camera, while this process holds it.
    var lock: ConfigurationLock?
    /// Whether `lockForConfiguration()` is in force (for every kind of device).
    var isLocked = false
    var activeFormat: ActiveVideoFormat?
    var minFrameDuration: MediaTime?
}

extension CaptureDevice {
    // MARK: Finding devices, as AVCaptureDevice does

    /// The cameras (or microphones) present now, in discovery's stable
    /// order, then the virtual ones (`test-pattern`; `test-tone`). ALSA's
    /// `default` counts as a microphone only where a sound card can capture.
    public static func devices(for mediaType: MediaType, discovery: DeviceDiscovery = DeviceDiscovery()) -> [CaptureDevice] {
        var hardware = discovery.devices(for: mediaType)
        if !hardware.contains(where: { $0.uniqueID != UniqueID.audioDefaultID }) { hardware = [] }
        return hardware + VirtualDevice.listed.filter { $0.mediaType == mediaType }.map(CaptureDevice.init(virtual:))
    }

    /// The first real camera (or microphone), or the virtual one when there is none.
    public static func `default`(for mediaType: MediaType, discovery: DeviceDiscovery = DeviceDiscovery()) -> CaptureDevice? {
        devices(for: mediaType, discovery: discovery).first
    }

    /// The device with `uniqueID`: a real one present now, or a virtual one
    /// (`virtual:test-pattern`, `virtual:test-tone:1000`, `virtual:file:PATH`);
    /// nil when there is none.
    public convenience init?(uniqueID: String, discovery: DeviceDiscovery = DeviceDiscovery()) {
        let found: CaptureDevice
        if uniqueID.hasPrefix(VirtualDevice.uniqueIDPrefix) {
            guard let virtual = VirtualDevice(specifier: String(uniqueID.dropFirst(VirtualDevice.uniqueIDPrefix.count))) else { return nil }
            found = CaptureDevice(virtual: virtual)
        } else {
            guard let device = discovery.device(uniqueID: uniqueID) else { return nil }
            found = device
        }
        self.init(path: found.path, uniqueID: found.uniqueID, localizedName: found.localizedName, mediaType: found.mediaType,
                  driver: found.driver, bus: found.bus, modelID: found.modelID, position: found.position,
                  hasTorch: found.hasTorch, hasFlash: found.hasFlash, access: found.access, backend: found.backend)
    }

    /// A virtual device as a capture device.
    convenience init(virtual: VirtualDevice) {
        self.init(path: virtual.specifier, uniqueID: virtual.uniqueID, localizedName: virtual.localizedName, mediaType: virtual.mediaType,
                  driver: "virtual", bus: "virtual", modelID: nil, position: .unspecified, hasTorch: false, hasFlash: false,
                  access: .authorized, backend: .virtual(virtual))
    }

    /// The virtual device this is, if it is one.
    public var virtualDevice: VirtualDevice? {
        if case .virtual(let virtual) = backend { return virtual }
        return nil
    }

    // MARK: Configuration

    /// Takes the device's configuration lock, as AVCaptureDevice's method:
    /// for a V4L2 camera an advisory lock that other programs (and other
    /// capctl processes) see, so nobody else changes it while this process
    /// configures and records. Choose `activeFormat` and
    /// `activeVideoMinFrameDuration` while it is held. Throws
    /// `configurationLocked` naming the holder when another process has it.
    public func lockForConfiguration() throws(CaptureError) {
        let held = configuration.withLock { $0.isLocked }
        guard !held else { return }
        var lock: ConfigurationLock?
        if case .v4l2 = backend {
            do {
                lock = try ConfigurationLock.acquireAdvisory(devicePath: path)
            } catch .locked(_, let holder) {
                throw .configurationLocked(path, holder: holder)
            } catch {
                throw .device(.busy(path, reason: error.description))
            }
        }
        configuration.withLock { state in
            state.lock = lock
            state.isLocked = true
        }
    }

    /// Lets go of the configuration lock. The chosen format stays chosen.
    public func unlockForConfiguration() {
        let lock = configuration.withLock { state -> ConfigurationLock? in
            defer { state.lock = nil; state.isLocked = false }
            return state.lock
        }
        lock?.release()
    }

    public var isLockedForConfiguration: Bool { configuration.withLock { $0.isLocked } }

    /// The pixel format and size capture uses (one of `videoFormats()`);
    /// nil lets the session choose (its preset, or the device's default).
    /// Changed only while the device is locked for configuration; a change
    /// without the lock is ignored, as AVFoundation refuses it.
    public var activeFormat: ActiveVideoFormat? {
        get { configuration.withLock { $0.activeFormat } }
        set { configuration.withLock { state in if state.isLocked { state.activeFormat = newValue } } }
    }

    /// The shortest time between frames capture asks for (1/30 s for 30
    /// fps); invalid leaves it to the active format. Changed only while the
    /// device is locked for configuration. Read without a choice, the
    /// camera's current interval (indefinite when the driver does not say).
    public var activeVideoMinFrameDuration: MediaTime {
        get {
            if let chosen = configuration.withLock({ $0.minFrameDuration }) { return chosen }
            if let interval = configuration.withLock({ $0.activeFormat?.frameInterval }) { return interval.mediaTime }
            return (try? activeVideoFormat().frameInterval?.mediaTime) ?? .indefinite
        }
        set { configuration.withLock { state in if state.isLocked { state.minFrameDuration = newValue.isNumeric ? newValue : nil } } }
    }

    /// V4L2 has one frame interval per format: the longest equals the shortest.
    public var activeVideoMaxFrameDuration: MediaTime { activeVideoMinFrameDuration }

    /// The capture request the chosen format makes, or `preset` without one.
    func captureRequest(preset: SessionPreset?) -> CaptureVideoRequest {
        let (format, duration) = configuration.withLock { ($0.activeFormat, $0.minFrameDuration) }
        var request = CaptureVideoRequest(preset: format == nil ? preset : nil)
        if let format {
            request.width = Int(format.dimensions.width)
            request.height = Int(format.dimensions.height)
            request.pixelFormat = format.fourcc.description
        }
        let interval = duration ?? format?.frameInterval?.mediaTime
        if let interval, interval.isNumeric, interval.seconds > 0 { request.framesPerSecond = 1 / interval.seconds }
        return request
    }
}
