#if canImport(Glibc)
import Glibc
#endif

/// Zoom and torch on `CaptureDevice`, as AVCaptureDevice names them (see
/// `CaptureDevice+CameraSettings.swift` for how settings are reached and locked).
extension CaptureDevice {
    // MARK: Zoom

    /// The zoom factor (1.0 is the full field of view) on
    /// V4L2_CID_ZOOM_ABSOLUTE; 1 without it. Setting it jumps there and
    /// stops a ramp; it is ignored unless locked for configuration and within
    /// 1…`maxAvailableVideoZoomFactor`; use `setVideoZoomFactor(_:)` to see why.
    ///
    /// V4L2 zoom has no optical meaning: the control's minimum counts as 1×
    /// (see `DeviceControls.zoomScale`), and the zoom is whatever the camera
    /// does, not AVFoundation's crop of the sensor.
    public var videoZoomFactor: Double {
        get { reading(1) { controls throws(ControlError) in try controls.videoZoomFactor() } }
        set { try? setVideoZoomFactor(newValue) }
    }

    /// Jumps to a zoom factor, stopping a ramp in progress, or says why not.
    public func setVideoZoomFactor(_ factor: Double) throws(ControlError) {
        guard isLockedForConfiguration else { throw .notLockedForConfiguration(device: path) }
        // Stop a ramp first, so that no step of it lands after the jump.
        cancelVideoZoomRamp()
        try change("zoom") { (controls: DeviceControls) throws(ControlError) in
            try controls.setVideoZoomFactor(factor)
        }
    }

    /// Always 1.
    public var minAvailableVideoZoomFactor: Double { 1 }

    /// The largest zoom factor; 1 without a zoom control.
    public var maxAvailableVideoZoomFactor: Double {
        reading(1) { controls throws(ControlError) in controls.isZoomSupported ? try controls.videoMaxZoomFactor() : nil }
    }

    /// Starts a smooth move to `factor` and returns: the factor changes by
    /// `rate` powers of two per second (1 doubles or halves it each second)
    /// on a background thread, until it is reached, another ramp starts, the
    /// zoom is set, or `cancelVideoZoomRamp()`. `isRampingVideoZoom` is true
    /// meanwhile. The ramp goes on after `unlockForConfiguration()`, as in
    /// AVFoundation. Throws when not locked for configuration, without zoom,
    /// or with a factor or rate out of range. A step that fails ends the ramp.
    public func ramp(toVideoZoomFactor factor: Double, withRate rate: Float) throws(ControlError) {
        guard isLockedForConfiguration else { throw .notLockedForConfiguration(device: path) }
        guard rate.isFinite, rate > 0 else {
            throw .outOfRange(device: path, control: "zoom ramp rate", value: "\(rate)", allowed: "a rate above 0 (powers of two per second)")
        }
        let start = try withControls("zoom") { (handle: CameraControlsHandle) throws(ControlError) -> Double in
            let controls = handle.controls
            guard controls.isZoomSupported, let current = try controls.videoZoomFactor(), let maximum = try controls.videoMaxZoomFactor() else {
                throw .notSupported(device: path, feature: "zoom", reason: "the device has no absolute zoom control (zoom_absolute)")
            }
            guard factor.isFinite, factor >= 1, factor <= maximum + 1e-9 else {
                throw .outOfRange(device: path, control: CameraFeature.zoom.rawValue, value: String(factor), allowed: "1.0…\(formatFactor(maximum))")
            }
            return current
        }
        let (generation, clock) = cameraSettings.withLock { state in
            state.rampGeneration += 1
            state.isRamping = true
            return (state.rampGeneration, state.clock)
        }
        let octaves = log2(factor / start)
        let duration = abs(octaves) / Double(rate)
        let direction: Double = octaves < 0 ? -1 : 1
        let startTime = clock.now()
        let tick = 1.0 / 30
        let ramp = { [self] in
            var step = 1
            while true {
                let elapsed = clock.now() - startTime
                let done = elapsed >= duration
                let target = done ? factor : start * pow(2, direction * Double(rate) * elapsed)
                let current = cameraSettings.withLock { state -> Bool in
                    guard state.rampGeneration == generation, let handle = state.controls else { return false }
                    do {
                        try handle.change { (controls: DeviceControls) throws(ControlError) in try controls.setVideoZoomFactor(target) }
                    } catch {
                        state.isRamping = false
                        return false
                    }
                    if done { state.isRamping = false }
                    return true
                }
                if !current || done { return }
                clock.sleep(until: min(startTime + Double(step) * tick, startTime + duration))
                step += 1
            }
        }
        do {
            // Not joined: the ramp runs on by itself, as in AVFoundation.
            _ = try CaptureThread.start(name: "zoom ramp", ramp)
        } catch {
            cameraSettings.withLock { state in
                if state.rampGeneration == generation { state.isRamping = false }
            }
            throw .requestFailed(device: path, control: "zoom ramp", error)
        }
    }

    /// Stops a zoom ramp where it has got to. AVFoundation slows the ramp to
    /// a stop; V4L2 zoom stops at once. Works with or without the lock.
    public func cancelVideoZoomRamp() {
        cameraSettings.withLock { state in
            state.rampGeneration += 1
            state.isRamping = false
        }
    }

    /// Whether a zoom ramp is in progress.
    public var isRampingVideoZoom: Bool { cameraSettings.withLock { $0.isRamping } }

    // MARK: Torch

    /// AVCaptureMaxAvailableTorchLevel: as bright as the light can be now.
    public static let maxAvailableTorchLevel = Float.greatestFiniteMagnitude

    /// The camera's light, looked for once (see `TorchDiscovery`): V4L2
    /// flash controls on the camera's own node (through the controls these
    /// settings keep open), a flash sub-device, else an LED class torch.
    private func torch() -> Torch? {
        guard hasTorch, case .v4l2(let v4l2) = backend else { return nil }
        if let known = cameraSettings.withLock({ $0.torch }) { return known }
        let discovery = cameraSettings.withLock { $0.torchDiscovery } ?? TorchDiscovery(v4l2: v4l2)
        let clock = cameraSettings.withLock { $0.clock }
        var found: Torch?
        if let own = try? withControls("torch", { handle in V4L2Torch(controls: handle.controls, isSubdevice: false) }) {
            found = Torch(backend: own)
        } else {
            for subdevice in discovery.flashSubdevicePaths(forVideoNode: path) {
                if let controls = try? DeviceControls.open(subdevice, interface: discovery.v4l2, clock: clock),
                   let light = V4L2Torch(controls: controls, isSubdevice: true) {
                    found = Torch(backend: light)
                    break
                }
            }
            if found == nil, let name = LEDTorch.cameraLights(sysfsRoot: discovery.sysfsRoot).first {
                found = (try? LEDTorch(name: name, sysfsRoot: discovery.sysfsRoot)).map { Torch(backend: $0) }
            }
        }
        cameraSettings.withLock { $0.torch = .some(found) }
        return found
    }

    /// Runs `body` on the light with its configuration lock (a V4L2 flash
    /// node's priority; LEDs have none), under the settings' lock.
    private func withTorch<T>(_ body: (Torch) throws(TorchError) -> T) throws(TorchError) -> T {
        guard isLockedForConfiguration else { throw .control(.notLockedForConfiguration(device: path)) }
        guard let light = torch() else {
            throw .noTorch(path, reason: hasTorch ? "its light could not be opened" : "it has no torch")
        }
        return try cameraSettings.withLock { (_: inout CameraSettingsState) throws(TorchError) -> T in
            try light.lockForConfiguration()
            defer { light.unlockForConfiguration() }
            return try body(light)
        }
    }

    /// Whether the torch can be set to `mode`: `.on` and `.off` where the
    /// camera has a torch; never `.auto` (Linux lights have no automatic mode).
    public func isTorchModeSupported(_ mode: TorchMode) -> Bool {
        guard hasTorch, let light = torch() else { return false }
        return light.isTorchModeSupported(mode)
    }

    private func torchStatus() -> TorchStatus? {
        guard hasTorch, let light = torch() else { return nil }
        return try? cameraSettings.withLock { (_: inout CameraSettingsState) throws(TorchError) -> TorchStatus in try light.status() }
    }

    /// `.on` while the torch is lit, else `.off` (never `.auto`). Setting it
    /// is ignored unless locked for configuration and supported; `.on` takes
    /// the most the light gives now. `setTorchMode(_:)` says why not.
    public var torchMode: TorchMode {
        get { torchStatus()?.isTorchActive == true ? .on : .off }
        set { try? setTorchMode(newValue) }
    }

    /// Sets the torch mode, or says why not.
    public func setTorchMode(_ mode: TorchMode) throws(TorchError) {
        try withTorch { (light: Torch) throws(TorchError) in try light.setTorchMode(mode) }
    }

    /// The torch level now, 0 (off) to 1 (full output).
    public var torchLevel: Float { Float(torchStatus()?.torchLevel ?? 0) }

    /// Whether the torch is lit now.
    public var isTorchActive: Bool { torchStatus()?.isTorchActive ?? false }

    /// Whether the torch can be turned on now (no fault such as overheating).
    public var isTorchAvailable: Bool { torchStatus()?.isTorchAvailable ?? false }

    /// Turns the torch on at `level` (0 < level ≤ 1, or
    /// `maxAvailableTorchLevel`). Throws when not locked for configuration
    /// (`.control(.notLockedForConfiguration)`), without a torch, or at a
    /// level the light cannot give now (the torch is then left as it was).
    public func setTorchModeOn(level: Float) throws(TorchError) {
        let wanted: TorchLevel = level == Self.maxAvailableTorchLevel ? .maximumAvailable : .level(Double(level))
        try withTorch { (light: Torch) throws(TorchError) in _ = try light.setTorchModeOn(level: wanted) }
    }
}
