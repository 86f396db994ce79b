import CFFmpeg

/// Converts images to one pixel format and size with libswscale, keeping its
/// scaler between calls (it is rebuilt only when the source changes).
public final class PixelConverter {
    public let pixelFormat: PixelFormat
    public let width: Int
    public let height: Int
    /// How pictures are resampled.
    public let scaling: Scaling
    private var scaler: OpaquePointer?

    /// How a converter resamples: `.accurate` (bicubic, exact rounding, full
    /// chroma: for files and photos) or `.fast` (area averaging: for a
    /// live view, where it costs a quarter less and looks the same at a
    /// smaller size).
    public enum Scaling: Sendable {
        case accurate, fast

        var flags: Int32 {
            switch self {
            case .accurate: return SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT
            case .fast: return SWS_AREA
            }
        }
    }

    public init(pixelFormat: PixelFormat, width: Int, height: Int, scaling: Scaling = .accurate) throws(WriterError) {
        guard pixelFormat.isConvertible(asInput: false) else { throw .invalidSettings("images cannot be converted to \(pixelFormat)") }
        guard width > 0, height > 0, width <= 32768, height <= 32768 else { throw .invalidSettings("a \(width)x\(height) image is not possible") }
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.scaling = scaling
    }

    deinit { sws_freeContext(scaler) }

    /// A new buffer holding `source` in this converter's format and size.
    public func convert(_ source: PixelBuffer) throws(WriterError) -> PixelBuffer {
        try convert(frame: source.frame)
    }

    /// Converts `source` into `memory`, laid out as `planes` (this
    /// converter's format and size, as `ImagePlaneLayout.planes` gives
    /// them), without allocating.
    func convert(frame source: UnsafeMutablePointer<AVFrame>, into memory: UnsafeMutableRawBufferPointer,
                 planes: [ImagePlaneLayout]) throws(WriterError) {
        guard let base = memory.baseAddress, let last = planes.last, planes.count == Int(av_pix_fmt_count_planes(pixelFormat.raw)),
              last.offset + last.bytesPerRow * last.height <= memory.count else { throw .invalidSettings("the buffer does not fit the image") }
        try withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: 4) { destinations throws(WriterError) in
            try withUnsafeTemporaryAllocation(of: Int32.self, capacity: 4) { strides throws(WriterError) in
                for index in 0..<4 {
                    let plane = index < planes.count ? planes[index] : nil
                    destinations[index] = plane.map { (base + $0.offset).assumingMemoryBound(to: UInt8.self) }
                    strides[index] = Int32(plane?.bytesPerRow ?? 0)
                }
                try scale(source, into: UnsafePointer(destinations.baseAddress!), strides: UnsafePointer(strides.baseAddress!))
            }
        }
    }

    func convert(frame source: UnsafeMutablePointer<AVFrame>) throws(WriterError) -> PixelBuffer {
        let output = try PixelBuffer(width: width, height: height, pixelFormat: pixelFormat)
        let target = output.frame
        try withUnsafeMutablePointer(to: &target.pointee.data) { (outData) throws(WriterError) in
            try withUnsafeMutablePointer(to: &target.pointee.linesize) { (outLines) throws(WriterError) in
                try outData.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { (destinations) throws(WriterError) in
                    try outLines.withMemoryRebound(to: Int32.self, capacity: 8) { (strides) throws(WriterError) in
                        try scale(source, into: destinations, strides: strides)
                    }
                }
            }
        }
        target.pointee.pts = source.pointee.pts
        return output
    }

    /// Scales `source` into the planes at `destinations` (with their row strides) with the cached scaler.
    private func scale(_ source: UnsafeMutablePointer<AVFrame>, into destinations: UnsafePointer<UnsafeMutablePointer<UInt8>?>,
                       strides: UnsafePointer<Int32>) throws(WriterError) {
        let sourceFormat = AVPixelFormat(source.pointee.format)
        guard sws_isSupportedInput(sourceFormat) > 0 else { throw .invalidSettings("images in \(PixelFormat(raw: sourceFormat)) cannot be converted") }
        scaler = sws_getCachedContext(scaler, source.pointee.width, source.pointee.height, sourceFormat,
                                      Int32(width), Int32(height), pixelFormat.raw, scaling.flags, nil, nil, nil)
        guard scaler != nil else { throw .invalidSettings("cannot convert \(PixelFormat(raw: sourceFormat)) to \(pixelFormat)") }
        let status = withUnsafePointer(to: &source.pointee.data) { data in
            withUnsafePointer(to: &source.pointee.linesize) { lines in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sourcePlanes in
                    lines.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                        sws_scale(scaler, sourcePlanes, sourceStrides, 0, source.pointee.height, destinations, strides)
                    }
                }
            }
        }
        guard status > 0 else { throw .ffmpeg(FFmpegError(call: "sws_scale", code: status < 0 ? status : -22)) }
    }
}
