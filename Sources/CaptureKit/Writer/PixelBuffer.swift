import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// A pixel format by its libavutil name (`yuv420p`, `nv12`, `yuyv422`,
/// `rgb24`, `bgra` …). Any format libswscale converts can be appended to a
/// writer input or asked of a video output.
public struct PixelFormat: Sendable, Hashable, CustomStringConvertible {
    let raw: AVPixelFormat

    init(raw: AVPixelFormat) { self.raw = raw }

    /// The format with this libavutil name, or nil if there is none.
    public init?(name: String) {
        let value = av_get_pix_fmt(name)
        guard value != AV_PIX_FMT_NONE else { return nil }
        raw = value
    }

    public var name: String { av_get_pix_fmt_name(raw).map { String(cString: $0) } ?? "none" }
    public var description: String { name }

    /// Whether libswscale reads (`asInput`) or writes this format.
    public func isConvertible(asInput: Bool) -> Bool {
        asInput ? sws_isSupportedInput(raw) > 0 : sws_isSupportedOutput(raw) > 0
    }

    /// The number of bytes a `width` x `height` image takes with rows packed
    /// (alignment 1), or nil for an impossible size.
    public func imageSize(width: Int, height: Int) -> Int? {
        let size = av_image_get_buffer_size(raw, Int32(width), Int32(height), 1)
        return size < 0 ? nil : Int(size)
    }

    public static let yuv420p = PixelFormat(raw: AV_PIX_FMT_YUV420P)
    public static let yuvj420p = PixelFormat(raw: AV_PIX_FMT_YUVJ420P)
    public static let yuv422p = PixelFormat(raw: AV_PIX_FMT_YUV422P)
    public static let yuv444p = PixelFormat(raw: AV_PIX_FMT_YUV444P)
    public static let nv12 = PixelFormat(raw: AV_PIX_FMT_NV12)
    public static let yuyv422 = PixelFormat(raw: AV_PIX_FMT_YUYV422)
    public static let uyvy422 = PixelFormat(raw: AV_PIX_FMT_UYVY422)
    public static let rgb24 = PixelFormat(raw: AV_PIX_FMT_RGB24)
    public static let bgr24 = PixelFormat(raw: AV_PIX_FMT_BGR24)
    public static let rgba = PixelFormat(raw: AV_PIX_FMT_RGBA)
    public static let bgra = PixelFormat(raw: AV_PIX_FMT_BGRA)
    public static let gray8 = PixelFormat(raw: AV_PIX_FMT_GRAY8)
}

/// An image in memory: planes of pixels in one pixel format, like a
/// CVPixelBuffer. Backed by a reference-counted FFmpeg frame that this object
/// owns and frees.
///
/// It is an `ImageBuffer`: `lockBaseAddress`/`baseAddress(ofPlane:)` as
/// with a captured frame's `imageBuffer`. Not Sendable: used from one
/// thread at a time (hand it to the writer from the thread that filled it).
public final class PixelBuffer {
    let frame: UnsafeMutablePointer<AVFrame>
    /// Base-address locks held now (`ImageBuffer`).
    var readLocks = 0
    var writeLocks = 0

    public var width: Int { Int(frame.pointee.width) }
    public var height: Int { Int(frame.pointee.height) }
    public var pixelFormat: PixelFormat { PixelFormat(raw: AVPixelFormat(frame.pointee.format)) }

    /// A new buffer with uninitialized pixels.
    public init(width: Int, height: Int, pixelFormat: PixelFormat) throws(WriterError) {
        guard width > 0, height > 0, width <= 32768, height <= 32768 else {
            throw .invalidSettings("a \(width)x\(height) image is not possible")
        }
        guard let frame = av_frame_alloc() else { throw .ffmpeg(FFmpegError(call: "av_frame_alloc", code: cffmpeg_averror(ENOMEM))) }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = pixelFormat.raw.rawValue
        let status = av_frame_get_buffer(frame, 0)
        if status < 0 {
            var pointer: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&pointer)
            throw .ffmpeg(FFmpegError(call: "av_frame_get_buffer(\(pixelFormat))", code: status))
        }
        self.frame = frame
    }

    /// Takes over a frame (and its reference).
    init(taking frame: UnsafeMutablePointer<AVFrame>) {
        self.frame = frame
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&pointer)
    }

    /// The number of planes (1 for packed formats, 2 for NV12, 3 for yuv420p).
    public var planeCount: Int { Int(av_pix_fmt_count_planes(pixelFormat.raw)) }

    /// Bytes from the start of one row to the start of the next in `plane`.
    public func bytesPerRow(plane: Int) -> Int {
        withPlaneArrays { _, lines in Int(lines[plane]) }
    }

    /// The number of rows in `plane` (chroma planes may have fewer).
    public func rowCount(plane: Int) -> Int {
        guard plane > 0, plane < 3, let descriptor = av_pix_fmt_desc_get(pixelFormat.raw) else { return height }
        let isChroma = descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) == 0 && descriptor.pointee.nb_components >= 3
        guard isChroma else { return height }
        let shift = Int(descriptor.pointee.log2_chroma_h)
        return (height + (1 << shift) - 1) >> shift
    }

    /// The bytes of one plane, `bytesPerRow(plane:) * rowCount(plane:)` long.
    public func withUnsafeBytes<R>(plane: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let (base, count) = planeRegion(plane)
        return try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The bytes of one plane, for writing. Makes the buffer writable first
    /// (copying it if an encoder still holds a reference).
    public func withUnsafeMutableBytes<R>(plane: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        _ = av_frame_make_writable(frame)
        let (base, count) = planeRegion(plane)
        return try body(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    private func planeRegion(_ plane: Int) -> (UnsafeMutableRawPointer?, Int) {
        precondition(plane >= 0 && plane < planeCount, "plane \(plane) out of range")
        return withPlaneArrays { data, lines in
            (UnsafeMutableRawPointer(data[plane]), Int(lines[plane]) * rowCount(plane: plane))
        }
    }

    func withPlaneArrays<R>(_ body: ([UnsafeMutablePointer<UInt8>?], [Int32]) -> R) -> R {
        let data = Swift.withUnsafeBytes(of: frame.pointee.data) { Array($0.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)) }
        let lines = Swift.withUnsafeBytes(of: frame.pointee.linesize) { Array($0.bindMemory(to: Int32.self)) }
        return body(data, lines)
    }
}

extension PixelBuffer: ImageBuffer {
    public func bytesPerRow(ofPlane plane: Int) -> Int {
        plane >= 0 && plane < planeCount ? bytesPerRow(plane: plane) : 0
    }

    public func width(ofPlane plane: Int) -> Int {
        plane >= 0 && plane < planeCount ? ImagePlaneLayout.size(ofPlane: plane, format: pixelFormat, width: width, height: height).width : 0
    }

    public func height(ofPlane plane: Int) -> Int {
        plane >= 0 && plane < planeCount ? rowCount(plane: plane) : 0
    }

    public func baseAddress(ofPlane plane: Int) -> UnsafeMutableRawPointer? {
        guard plane >= 0, plane < planeCount, readLocks + writeLocks > 0 else { return nil }
        return withPlaneArrays { data, _ in UnsafeMutableRawPointer(data[plane]) }
    }

    /// Locks the planes; without `.readOnly` the frame is made writable first
    /// (copied when an encoder still holds a reference to it), so that
    /// writing never changes a picture handed on before.
    @discardableResult
    public func lockBaseAddress(_ flags: ImageBufferLockFlags = []) -> Bool {
        if flags.contains(.readOnly) {
            readLocks += 1
        } else {
            guard av_frame_make_writable(frame) >= 0 else { return false }
            writeLocks += 1
        }
        return true
    }

    public func unlockBaseAddress(_ flags: ImageBufferLockFlags = []) {
        if flags.contains(.readOnly) { readLocks = max(0, readLocks - 1) } else { writeLocks = max(0, writeLocks - 1) }
    }

    /// Whether the buffer is locked now (a pool does not hand out a locked buffer).
    var isLocked: Bool { readLocks + writeLocks > 0 }

    /// A new buffer holding a copy of `image` (a captured frame's image
    /// buffer, say), in its format and size: to keep a frame past the
    /// delegate call, or to convert or encode it.
    public convenience init(copying image: some ImageBuffer) throws(WriterError) {
        try self.init(width: image.width, height: image.height, pixelFormat: image.pixelFormat)
        let copied: Bool = image.withLockedBaseAddress(.readOnly) { source in
            for plane in 0..<min(source.planeCount, planeCount) {
                guard let from = source.baseAddress(ofPlane: plane) else { return false }
                let rowBytes = min(source.bytesPerRow(ofPlane: plane), bytesPerRow(plane: plane),
                                   Int(av_image_get_linesize(pixelFormat.raw, Int32(width), Int32(plane))))
                let sourceStride = source.bytesPerRow(ofPlane: plane)
                withUnsafeMutableBytes(plane: plane) { target in
                    let stride = bytesPerRow(plane: plane)
                    for row in 0..<min(rowCount(plane: plane), source.height(ofPlane: plane)) {
                        (target.baseAddress! + row * stride).copyMemory(from: from + row * sourceStride, byteCount: rowBytes)
                    }
                }
            }
            return true
        }
        guard copied else { throw .invalidState("the image's planes cannot be read") }
    }
}
