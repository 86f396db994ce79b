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
