/// Changing a camera's controls and torch while a session streams it.
///
/// A session that holds a camera's configuration lock (`locksConfiguration`)
/// keeps an advisory lock that other processes see, and the V4L2 record
/// priority on the handle it captures through: the driver then refuses
/// changes through every other handle (EBUSY), those this process opens
/// included. These methods make the change through the capturing handle
/// itself, so the process that owns the session can change its camera while
/// everybody else stays locked out. Without the session's lock (or before
/// the session opened the camera), they take the configuration lock for the
/// change alone, as `capctl set` does, and are refused while another process holds it.
extension CaptureInput {
    /// Runs `body` on the camera's controls, locked for configuration for
    /// its duration. Throws `.notSupported` for a virtual camera or a
    /// microphone, `.locked` when another process holds the lock.
    package func withControlsLockedForConfiguration<T>(_ body: (DeviceControls) throws(ControlError) -> T) throws(ControlError) -> T {
        guard let camera = source as? V4L2CaptureSource else {
            let reason = mediaType == .video ? "a virtual camera has no controls" : "a microphone has no camera controls"
            throw .notSupported(device: source.path, feature: "controls", reason: reason)
        }
        if camera.holdsRecordPriority, let node = camera.captureControlNode {
            return try body(DeviceControls(capturing: node, path: camera.path))
        }
        let controls = try DeviceControls.open(camera.path)
        try controls.lockForConfiguration()
        defer { controls.unlockForConfiguration() }
        return try body(controls)
    }

    /// Runs `body` on the camera's light (see `TorchDiscovery`), locked for
    /// configuration for its duration. Flash controls on the camera's own
    /// node are reached as `withControlsLockedForConfiguration` reaches
    /// controls; a flash sub-device or an LED has a lock of its own. Throws
    /// `.noTorch` for a virtual camera or a microphone, `.noLightFound`
    /// when the camera has no light.
    package func withTorchLockedForConfiguration<T>(_ body: (Torch) throws(TorchError) -> T) throws(TorchError) -> T {
        guard let camera = source as? V4L2CaptureSource else {
            let reason = mediaType == .video ? "a virtual camera has no torch" : "a microphone has no torch"
            throw .noTorch(source.path, reason: reason)
        }
        if camera.holdsRecordPriority, let node = camera.captureControlNode,
           let light = V4L2Torch(controls: DeviceControls(capturing: node, path: camera.path), isSubdevice: false) {
            return try body(Torch(backend: light))
        }
        let torch = try TorchDiscovery().torch(forDevice: camera.path)
        try torch.lockForConfiguration()
        defer { torch.unlockForConfiguration() }
        return try body(torch)
    }
}
