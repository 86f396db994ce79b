/// A source attached to a capture session, like AVCaptureDeviceInput: the
/// session opens it, runs its capture loop, and hands its samples to every
/// output together with the input they came from.
public final class CaptureInput: @unchecked Sendable {
    public let source: any CaptureSource
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
