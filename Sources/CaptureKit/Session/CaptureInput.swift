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
