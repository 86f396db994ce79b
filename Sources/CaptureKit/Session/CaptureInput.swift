/// A source attached to a capture session, like AVCaptureDeviceInput: the
/// session opens it, runs its capture loop, and hands its samples to every
/// output together with the input they came from.
public class CaptureInput: @unchecked Sendable {
    // @unchecked: `isOpen` and `locking` are guarded by `lock`; `source` is immutable.
    public let source: any CaptureSource
    /// The encoders sinks share for this input's frames, one per setting.
    let compression = CompressionStages()
    private var isOpen = false
    private let lock = WriterLock()

    public init(source: any CaptureSource) {
        self.source = source
    }

    /// Whether the session takes the camera's configuration lock while it
    /// runs (as `lockForConfiguration()` would: an advisory lock, and V4L2's
    /// record priority on the capture handle), so that no other program
    /// changes its format or controls meanwhile. On by default; it applies
    /// to V4L2 cameras. Set before the session starts.
    public var locksConfiguration: Bool {
        get { lock.withLock { locking } }
        set { lock.withLock { locking = newValue } }
    }
    private var locking = true

    public var mediaType: MediaType { source.mediaType }

    /// Opens the source (settling its format) unless that was done already.
    public func open() throws(CaptureError) {
        try lock.withLock { () throws(CaptureError) in
            guard !isOpen else { return }
            try source.open()
            isOpen = true
        }
    }

    func close() {
        lock.withLock {
            if isOpen { source.close() }
            isOpen = false
        }
    }
}

/// A capture device as a session's input, like AVCaptureDeviceInput: its
/// source captures in the format chosen on the device (`activeFormat`,
/// `activeVideoMinFrameDuration`, under `lockForConfiguration()`), or the
/// device's default. Choose the format before making the input.
public final class CaptureDeviceInput: CaptureInput, @unchecked Sendable {
    // @unchecked: restated from CaptureInput; `device` is immutable.
    public let device: CaptureDevice

    /// An input for `device`. Throws when this process may not open it
    /// (`permissionDenied`, with how to get access) or it is gone. A file
    /// played as a camera (`virtual:file:PATH`) plays in real time.
    public init(device: CaptureDevice) throws(CaptureError) {
        if case .denied(let reason) = device.access { throw .device(.permissionDenied(device.path, reason: reason)) }
        self.device = device
        let source: any CaptureSource
        switch device.backend {
        case .virtual(let virtual):
            source = virtual.makeSource(video: device.captureRequest(preset: nil), audio: CaptureAudioRequest(), realtime: true)
        case .v4l2:
            source = V4L2CaptureSource(device: device, request: device.captureRequest(preset: nil))
        case .alsa:
            source = ALSACaptureSource(device: device)
        }
        super.init(source: source)
    }
}
