import CFFmpeg

/// Pixel buffers of one format and size, reused once nobody holds them, as
/// CVPixelBufferPool (AVAssetWriterInputPixelBufferAdaptor's `pixelBufferPool`).
///
/// A buffer goes back to the pool by itself when the program lets go of it
/// and no encoder still holds its frame (FFmpeg frames are reference
/// counted; the pool asks `av_frame_is_writable`), and it is not locked.
/// `makePixelBuffer()` hands out such a buffer, or makes a new one.
/// Its pixels are whatever was last drawn in it: draw every pixel.
///
/// Safe to use from several threads; each buffer it hands out belongs to one.
public final class PixelBufferPool: Sendable {
    public let pixelFormat: PixelFormat
    public let width: Int
    public let height: Int
    /// The most buffers the pool makes (nil: no limit).
    public let maximumBufferCount: Int?
    /// Every buffer the pool made. One the pool holds alone
    /// (isKnownUniquelyReferenced) cannot be reached by another thread, so
    /// checking it and handing it out under the lock gives it to one thread.
    private let buffers = Locked<[PixelBuffer]>([])

    /// A pool of `width` x `height` buffers in `pixelFormat`. Throws for a
    /// format or size FFmpeg cannot allocate.
    public init(pixelFormat: PixelFormat, width: Int, height: Int, maximumBufferCount: Int? = nil) throws(WriterError) {
        guard width > 0, height > 0, width <= 32768, height <= 32768 else {
            throw .invalidSettings("a \(width)x\(height) image is not possible")
        }
        guard pixelFormat.imageSize(width: width, height: height) != nil else {
            throw .invalidSettings("\(pixelFormat) cannot hold a \(width)x\(height) image")
        }
        if let maximumBufferCount, maximumBufferCount < 1 { throw .invalidSettings("a pool needs room for one buffer at least") }
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.maximumBufferCount = maximumBufferCount
    }

    /// A buffer nobody else holds, reused or new, as CVPixelBufferPoolCreatePixelBuffer.
    /// Throws when `maximumBufferCount` buffers are all in use.
    public func makePixelBuffer() throws(WriterError) -> PixelBuffer {
        try buffers.withLock { (buffers: inout [PixelBuffer]) throws(WriterError) -> PixelBuffer in
            for index in buffers.indices where isKnownUniquelyReferenced(&buffers[index]) {
                let buffer = buffers[index]
                if !buffer.isLocked && av_frame_is_writable(buffer.frame) != 0 { return buffer }
            }
            if let maximumBufferCount, buffers.count >= maximumBufferCount {
                throw .invalidState("all \(maximumBufferCount) buffers of the pool are in use")
            }
            let made = try PixelBuffer(width: width, height: height, pixelFormat: pixelFormat)
            buffers.append(made)
            return made
        }
    }

    /// Buffers the pool has made so far (in use or free).
    public var bufferCount: Int { buffers.withLock { $0.count } }

    /// Lets go of the buffers nobody holds (CVPixelBufferPoolFlush).
    public func flush() {
        buffers.withLock { buffers in
            var kept: [PixelBuffer] = []
            for index in buffers.indices where !isKnownUniquelyReferenced(&buffers[index]) || av_frame_is_writable(buffers[index].frame) == 0 {
                kept.append(buffers[index])
            }
            buffers = kept
        }
    }
}

/// What the pixel buffers appended through an adaptor are, as
/// AVAssetWriterInputPixelBufferAdaptor's `sourcePixelBufferAttributes`
/// (kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey, kCVPixelBufferHeightKey).
/// Any field left nil takes the input's: its settings' pixel format (else
/// yuv420p) and size.
public struct PixelBufferAttributes: Sendable, Hashable {
    public var pixelFormat: PixelFormat?
    public var width: Int?
    public var height: Int?

    public init(pixelFormat: PixelFormat? = nil, width: Int? = nil, height: Int? = nil) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
    }
}

/// Appends pixel buffers to a video input, with a pool of buffers to draw
/// them in, as AVAssetWriterInputPixelBufferAdaptor.
///
/// Unlike AVFoundation, the pool exists as soon as the adaptor does (it
/// needs no running writer); it is nil only for an input that does not
/// encode video (audio or passthrough) when the attributes give no size.
public final class AssetWriterInputPixelBufferAdaptor: Sendable {
    public let assetWriterInput: AssetWriterInput
    public let sourcePixelBufferAttributes: PixelBufferAttributes?
    /// Buffers in the attributes' format and size, reused once the writer is done with them.
    public let pixelBufferPool: PixelBufferPool?

    public init(assetWriterInput: AssetWriterInput, sourcePixelBufferAttributes: PixelBufferAttributes? = nil) {
        self.assetWriterInput = assetWriterInput
        self.sourcePixelBufferAttributes = sourcePixelBufferAttributes
        var settings: VideoOutputSettings?
        if case .video(let video) = assetWriterInput.outputSettings { settings = video }
        let attributes = sourcePixelBufferAttributes ?? PixelBufferAttributes()
        let format = attributes.pixelFormat ?? settings?.pixelFormat ?? .yuv420p
        if let width = attributes.width ?? settings?.width, let height = attributes.height ?? settings?.height {
            pixelBufferPool = try? PixelBufferPool(pixelFormat: format, width: width, height: height)
        } else {
            pixelBufferPool = nil
        }
    }

    /// Appends one image (a pool's buffer, any `PixelBuffer`, or a captured
    /// frame's `imageBuffer`) shown at `presentationTime` until the next, as
    /// AVAssetWriterInputPixelBufferAdaptor.append(_:withPresentationTime:).
    /// Where AVFoundation returns false and sets the writer's `error`, this
    /// throws the error (the writer records it too when it fails the writer).
    /// The pixels are read during the call: the buffer may be reused after it.
    public func append(_ pixelBuffer: some ImageBuffer, withPresentationTime presentationTime: MediaTime) throws(WriterError) {
        try assetWriterInput.append(image: pixelBuffer, presentationTime: presentationTime, duration: nil)
    }
}

extension AssetWriterInput {
    /// Appends any image buffer, its planes read in place while it is locked read-only.
    func append(image: some ImageBuffer, presentationTime: MediaTime, duration: MediaTime?) throws(WriterError) {
        if let buffer = image as? PixelBuffer {
            try append(buffer, presentationTime: presentationTime, duration: duration)
            return
        }
        let locked = image.lockBaseAddress(.readOnly)
        defer { if locked { image.unlockBaseAddress(.readOnly) } }
        guard locked, image.planeCount > 0, image.planeCount <= 4 else { throw .invalidState("the image's planes cannot be read") }
        var planes = [UnsafePointer<UInt8>?](repeating: nil, count: 4)
        var strides = [Int32](repeating: 0, count: 4)
        for plane in 0..<image.planeCount {
            guard let base = image.baseAddress(ofPlane: plane) else { throw .invalidState("the image's plane \(plane) cannot be read") }
            planes[plane] = UnsafePointer(base.assumingMemoryBound(to: UInt8.self))
            strides[plane] = Int32(image.bytesPerRow(ofPlane: plane))
        }
        try planes.withUnsafeBufferPointer { planePointer throws(WriterError) in
            try strides.withUnsafeBufferPointer { stridePointer throws(WriterError) in
                try appendVideo(planes: planePointer.baseAddress!, strides: stridePointer.baseAddress!, format: image.pixelFormat.raw,
                                width: Int32(image.width), height: Int32(image.height), presentationTime: presentationTime, duration: duration)
            }
        }
    }
}
