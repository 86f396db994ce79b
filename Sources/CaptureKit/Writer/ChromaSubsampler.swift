import CFFmpeg

/// Converts 8-bit 4:2:2 images (planar, YUYV or UYVY) to planar 4:2:0 of the
/// same size and range without libswscale.
///
/// Why: for these pairs libswscale runs its general vertical filter over the
/// chroma planes, a quarter of the CPU time of a 1080p H.264 recording with
/// x264's fastest preset; the conversion itself is only a luma copy (none,
/// where the encoder reads a planar source's luma in place) and one vertical
/// halving of chroma. Each 4:2:0 chroma sample is the rounded mean
/// of the two 4:2:2 rows it stands between, which is where MPEG-2, H.264 and
/// HEVC site 4:2:0 chroma; an odd last row is copied.
struct ChromaSubsampler {
    private enum Layout {
        case planar
        /// Packed pairs of pixels: byte offsets of Y0, Y1, U and V in each 4-byte group.
        case packed(y0: Int, y1: Int, u: Int, v: Int)
    }

    private let layout: Layout
    private let width: Int

    /// The converter from `source` to `destination` for images `width`
    /// pixels wide, or nil when it does not handle them (libswscale does):
    /// other pairs of formats, and packed sources of an odd width.
    init?(from source: AVPixelFormat, to destination: AVPixelFormat, width: Int) {
        guard width > 0 else { return nil }
        self.width = width
        switch (source, destination) {
        case (AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV420P), (AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ420P):
            layout = .planar
        case (AV_PIX_FMT_YUYV422, AV_PIX_FMT_YUV420P):
            layout = .packed(y0: 0, y1: 2, u: 1, v: 3)
        case (AV_PIX_FMT_UYVY422, AV_PIX_FMT_YUV420P):
            layout = .packed(y0: 1, y1: 3, u: 0, v: 2)
        default:
            return nil
        }
        if case .packed = layout, width % 2 != 0 { return nil }
    }

    /// Whether luma is a plane of its own in the source, which an encoder
    /// that copies its input could read where it is.
    var hasLumaPlane: Bool {
        if case .planar = layout { return true }
        return false
    }

    /// Converts an image `height` rows high described by FFmpeg-style
    /// `planes` and `strides` into the three planes of `destination` (whose
    /// strides are `destinationStrides`); false if a plane is missing.
    func convert(planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>, height: Int,
                 into destination: UnsafePointer<UnsafeMutablePointer<UInt8>?>, destinationStrides: UnsafePointer<Int32>) -> Bool {
        guard height > 0, let yOut = destination[0], let source = planes[0] else { return false }
        let yStride = Int(destinationStrides[0])
        switch layout {
        case .planar:
            let luma = Int(strides[0])
            for row in 0..<height {
                (yOut + row * yStride).update(from: source + row * luma, count: width)
            }
        case .packed(let y0, let y1, _, _):
            let pitch = Int(strides[0])
            for row in 0..<height {
                let line = source + row * pitch
                let y = yOut + row * yStride
                for pair in 0..<width / 2 {
                    y[2 * pair] = line[4 * pair + y0]
                    y[2 * pair + 1] = line[4 * pair + y1]
                }
            }
        }
        return convertChroma(planes: planes, strides: strides, height: height, u: destination[1], uStride: Int(destinationStrides[1]),
                             v: destination[2], vStride: Int(destinationStrides[2]))
    }

    /// Writes only the two 4:2:0 chroma planes, `(height + 1) / 2` rows each;
    /// false if a plane is missing.
    func convertChroma(planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>, height: Int,
                       u uOut: UnsafeMutablePointer<UInt8>?, uStride: Int, v vOut: UnsafeMutablePointer<UInt8>?, vStride: Int) -> Bool {
        guard height > 0, let uOut, let vOut, let source = planes[0] else { return false }
        switch layout {
        case .planar:
            guard let uIn = planes[1], let vIn = planes[2] else { return false }
            let uPitch = Int(strides[1]), vPitch = Int(strides[2])
            let chromaWidth = (width + 1) / 2
            for row in 0..<(height + 1) / 2 {
                let upper = 2 * row, lower = min(2 * row + 1, height - 1)
                Self.average(uIn + upper * uPitch, uIn + lower * uPitch, into: uOut + row * uStride, count: chromaWidth)
                Self.average(vIn + upper * vPitch, vIn + lower * vPitch, into: vOut + row * vStride, count: chromaWidth)
            }
        case .packed(_, _, let u, let v):
            let pitch = Int(strides[0])
            for row in 0..<(height + 1) / 2 {
                let upper = source + 2 * row * pitch, lower = source + min(2 * row + 1, height - 1) * pitch
                let uRow = uOut + row * uStride, vRow = vOut + row * vStride
                for pair in 0..<width / 2 {
                    uRow[pair] = Self.mean(upper[4 * pair + u], lower[4 * pair + u])
                    vRow[pair] = Self.mean(upper[4 * pair + v], lower[4 * pair + v])
                }
            }
        }
        return true
    }

    @inline(__always)
    private static func mean(_ a: UInt8, _ b: UInt8) -> UInt8 {
        UInt8(truncatingIfNeeded: (UInt16(a) &+ UInt16(b) &+ 1) &>> 1)
    }

    private static func average(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, into out: UnsafeMutablePointer<UInt8>, count: Int) {
        for index in 0..<count { out[index] = mean(a[index], b[index]) }
    }
}
