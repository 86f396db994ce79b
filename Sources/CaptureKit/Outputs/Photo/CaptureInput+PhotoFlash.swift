extension CaptureInput {
    /// The camera's flash or torch as a photo output's flash, for photos
    /// taken with `mode`: none for `off`; with `auto`, none when the camera
    /// has no light; with `on`, a camera without one is refused.
    public func photoFlash(for mode: PhotoFlashMode) throws(PhotoError) -> (any PhotoFlashDevice)? {
        guard mode != .off else { return nil }
        let path = source.path
        guard source is V4L2CaptureSource else {
            if mode == .on { throw .flash("\(path): the camera has no flash or torch") }
            return nil
        }
        do {
            let torch = try TorchDiscovery().torch(forDevice: path)
            return try TorchPhotoFlash(torch: torch)
        } catch let error as PhotoError {
            if mode == .on { throw error }
        } catch {
            if mode == .on { throw .flash("\(path): the camera has no flash or torch (\(error))") }
        }
        return nil
    }
}

extension CaptureInput {
    /// The camera's light as the flash of a photo output on a session that
    /// holds the camera's configuration lock: fired through
    /// `withTorchLockedForConfiguration`, so that the session's own lock does
    /// not refuse it (a `photoFlash(for:)` light has a handle of its own,
    /// which the driver refuses while the session holds the record priority).
    /// nil for a camera without a light, a virtual camera and a microphone.
    /// Looked for once, before the session starts.
    public func sessionPhotoFlash() -> (any PhotoFlashDevice)? {
        guard let camera = source as? V4L2CaptureSource, let torch = try? TorchDiscovery().torch(forDevice: camera.path),
              torch.hasFlash || torch.hasTorch else { return nil }
        return SessionPhotoFlash(input: self)
    }
}

/// A photo flash fired through the camera's session (see `CaptureInput.sessionPhotoFlash()`):
/// the V4L2 flash strobe when the light has one, else the torch on at full
/// available level for the frame.
final class SessionPhotoFlash: PhotoFlashDevice {
    private let input: CaptureInput
    /// Whether `fire()` turned the torch on (used on the photo output's processing thread alone).
    private var torchOn = false

    init(input: CaptureInput) {
        self.input = input
    }

    func fire() throws(PhotoError) {
        do {
            torchOn = try input.withTorchLockedForConfiguration { torch throws(TorchError) -> Bool in
                if torch.hasFlash {
                    try torch.strobeFlash()
                    return false
                }
                _ = try torch.setTorchModeOn(level: .maximumAvailable)
                return true
            }
        } catch {
            throw .flash("cannot fire the flash: \(error.description)")
        }
    }

    func extinguish() {
        guard torchOn else { return }
        torchOn = false
        try? input.withTorchLockedForConfiguration { torch throws(TorchError) in try torch.setTorchMode(.off) }
    }
}
