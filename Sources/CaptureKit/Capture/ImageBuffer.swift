import CFFmpeg
import Synchronization

/// How an image buffer's memory is locked, as CVPixelBufferLockFlags.
public struct ImageBufferLockFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The memory is only read while locked. Capture buffers lock only this way.
    public static let readOnly = ImageBufferLockFlags(rawValue: 1)
}

/// An image in memory seen plane by plane, like CVImageBuffer/CVPixelBuffer:
/// a captured frame (`VideoSampleBuffer.imageBuffer`) and a writer's own
/// frame (`PixelBuffer`) both are one, so a program reads (or fills) both
/// with the same code.
///
/// Access is scoped as with CVPixelBufferLockBaseAddress: `baseAddress(ofPlane:)`
/// gives memory only between `lockBaseAddress` and the matching
/// `unlockBaseAddress` (nil otherwise), or inside `withLockedBaseAddress { }`.
/// A captured frame's memory is the device's and is read-only: it locks only
/// with `.readOnly`. A `PixelBuffer` locked without `.readOnly` is made
/// writable first (copied if an encoder still holds its frame).
///
/// Unlike CoreVideo, `planeCount` is 1 (not 0) for packed formats (BGRA,
/// YUYV): plane 0 is the whole image, so one loop over planes serves every
/// format. `baseAddress` and `bytesPerRow` are plane 0's, as CVPixelBufferGetBaseAddress.
public protocol ImageBuffer: AnyObject {
    var pixelFormat: PixelFormat { get }
    var width: Int { get }
    var height: Int { get }
    /// The number of planes: 1 for packed formats, 2 for NV12, 3 for yuv420p.
    var planeCount: Int { get }
    /// Bytes from the start of one row of `plane` to the start of the next.
    func bytesPerRow(ofPlane plane: Int) -> Int
    /// Pixels across `plane` (chroma planes of subsampled formats have fewer).
    func width(ofPlane plane: Int) -> Int
    /// Rows in `plane` (chroma planes of 4:2:0 formats have half).
    func height(ofPlane plane: Int) -> Int
    /// The first byte of `plane`, or nil when the buffer is not locked or
    /// there is no such plane.
    func baseAddress(ofPlane plane: Int) -> UnsafeMutableRawPointer?
    /// Makes `baseAddress(ofPlane:)` valid until the matching unlock; false
    /// when the buffer cannot be locked that way (a capture buffer without
    /// `.readOnly`, or a pixel buffer that cannot be made writable). Locks nest.
    @discardableResult func lockBaseAddress(_ flags: ImageBufferLockFlags) -> Bool
    /// Ends one `lockBaseAddress` made with the same flags.
    func unlockBaseAddress(_ flags: ImageBufferLockFlags)
}

extension ImageBuffer {
    /// Plane 0's first byte (the image of a packed format), nil when not locked.
    public var baseAddress: UnsafeMutableRawPointer? { baseAddress(ofPlane: 0) }
    /// Plane 0's row stride.
    public var bytesPerRow: Int { bytesPerRow(ofPlane: 0) }
    /// Whether the format keeps its components in more than one plane.
    public var isPlanar: Bool { planeCount > 1 }

    /// Runs `body` with the buffer locked (read-only unless `flags` says
    /// otherwise), and unlocks it after. If the lock is refused, `body`
    /// still runs and `baseAddress(ofPlane:)` gives nil in it.
    public func withLockedBaseAddress<R, E: Error>(_ flags: ImageBufferLockFlags = .readOnly,
                                                   _ body: (Self) throws(E) -> R) throws(E) -> R {
        let locked = lockBaseAddress(flags)
        defer { if locked { unlockBaseAddress(flags) } }
        return try body(self)
    }
}

/// The geometry of one plane: where it starts in the image's memory, its
/// stride, and its size in pixels and rows.
struct ImagePlaneLayout: Sendable, Hashable {
    var offset: Int
    var bytesPerRow: Int
    var width: Int
    var height: Int

    /// The planes of a `width` x `height` image in `format`, rows packed or
    /// `bytesPerRow` apart (single-plane formats), planes one after another;
    /// nil when libavutil cannot lay it out.
    static func planes(format: PixelFormat, width: Int, height: Int, bytesPerRow: Int?) -> [ImagePlaneLayout]? {
        guard width > 0, height > 0, width <= 32768, height <= 32768 else { return nil }
        let count = Int(av_pix_fmt_count_planes(format.raw))
        guard count > 0, count <= 4 else { return nil }
        if bytesPerRow != nil && count != 1 { return nil }
        var planes: [ImagePlaneLayout] = []
        var offset = 0
        for plane in 0..<count {
            let stride = plane == 0 && bytesPerRow != nil ? bytesPerRow! : Int(av_image_get_linesize(format.raw, Int32(width), Int32(plane)))
            guard stride > 0 else { return nil }
            let (planeWidth, planeHeight) = size(ofPlane: plane, format: format, width: width, height: height)
            planes.append(ImagePlaneLayout(offset: offset, bytesPerRow: stride, width: planeWidth, height: planeHeight))
            offset += stride * planeHeight
        }
        return planes
    }

    /// The pixels and rows of `plane` of an image in `format`: chroma planes
    /// (1 and 2 of a YUV format) are subsampled, others are the image's size.
    static func size(ofPlane plane: Int, format: PixelFormat, width: Int, height: Int) -> (width: Int, height: Int) {
        guard plane == 1 || plane == 2, let descriptor = av_pix_fmt_desc_get(format.raw) else { return (width, height) }
        let isChroma = descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) == 0 && descriptor.pointee.nb_components >= 3
        guard isChroma else { return (width, height) }
        let shiftW = Int(descriptor.pointee.log2_chroma_w), shiftH = Int(descriptor.pointee.log2_chroma_h)
        return (-((-width) >> shiftW), -((-height) >> shiftH))
    }
}

/// The image-buffer view of a raw captured frame (`VideoSampleBuffer.imageBuffer`):
/// its planes read in place in the capture buffer, which it keeps alive.
/// Read-only: it locks only with `.readOnly`. May be used from any thread.
public final class SampleImageBuffer: ImageBuffer, Sendable {
    public let pixelFormat: PixelFormat
    public let width: Int
    public let height: Int
    let storage: SampleStorage
    let planes: [ImagePlaneLayout]
    /// Read-only locks held now.
    private let locks = Mutex(0)

    init?(storage: SampleStorage, format: PixelFormat, width: Int, height: Int, bytesPerRow: Int?) {
        guard let planes = ImagePlaneLayout.planes(format: format, width: width, height: height, bytesPerRow: bytesPerRow),
              let last = planes.last, storage.bytes.baseAddress != nil else { return nil }
        // The last row of the last plane may stop at its pixels (padding left off).
        let lastRow = last.bytesPerRow * (last.height - 1) + av_image_get_linesize(format.raw, Int32(width), Int32(planes.count - 1)).asInt
        guard storage.bytes.count >= last.offset + lastRow else { return nil }
        self.pixelFormat = format
        self.width = width
        self.height = height
        self.storage = storage
        self.planes = planes
    }

    public var planeCount: Int { planes.count }

    public func bytesPerRow(ofPlane plane: Int) -> Int { planes.indices.contains(plane) ? planes[plane].bytesPerRow : 0 }
    public func width(ofPlane plane: Int) -> Int { planes.indices.contains(plane) ? planes[plane].width : 0 }
    public func height(ofPlane plane: Int) -> Int { planes.indices.contains(plane) ? planes[plane].height : 0 }

    public func baseAddress(ofPlane plane: Int) -> UnsafeMutableRawPointer? {
        guard planes.indices.contains(plane), locks.withLock({ $0 > 0 }), let base = storage.bytes.baseAddress else { return nil }
        // Mutable only in type, as CVPixelBufferGetBaseAddressOfPlane: the memory is read-only.
        return UnsafeMutableRawPointer(mutating: base + planes[plane].offset)
    }

    /// Locks for reading; refuses (false) a lock without `.readOnly`.
    @discardableResult
    public func lockBaseAddress(_ flags: ImageBufferLockFlags = .readOnly) -> Bool {
        guard flags.contains(.readOnly) else { return false }
        locks.withLock { $0 += 1 }
        return true
    }

    public func unlockBaseAddress(_ flags: ImageBufferLockFlags = .readOnly) {
        guard flags.contains(.readOnly) else { return }
        locks.withLock { $0 = max(0, $0 - 1) }
    }
}

private extension Int32 {
    var asInt: Int { Int(self) }
}
