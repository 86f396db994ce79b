import CFFmpeg

/// The planes and strides of an image as libswscale and the encoders take
/// them (up to 4 planes), read in place from a capture buffer or an AVFrame.
enum PixelPlanes {
    /// Lays out `bytes` (an image in `format`, rows packed, or `bytesPerRow`
    /// apart for single-plane formats) and hands its planes to `body`.
    static func with<T>(_ bytes: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int, bytesPerRow: Int?,
                        _ body: (UnsafePointer<UnsafePointer<UInt8>?>, UnsafePointer<Int32>) throws(WriterError) -> T) throws(WriterError) -> T {
        guard width > 0, height > 0, width <= 32768, height <= 32768, let base = bytes.baseAddress else {
            throw .invalidSettings("a \(width)x\(height) frame is not possible")
        }
        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 4)
        var strides = [Int32](repeating: 0, count: 4)
        let needed: Int32
        if let bytesPerRow {
            guard av_pix_fmt_count_planes(format.raw) == 1 else {
                throw .invalidSettings("bytesPerRow applies to single-plane formats; \(format) has \(av_pix_fmt_count_planes(format.raw)) planes")
            }
            planes[0] = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
            strides[0] = Int32(bytesPerRow)
            needed = Int32(bytesPerRow * height)
        } else {
            needed = av_image_fill_arrays(&planes, &strides, base.assumingMemoryBound(to: UInt8.self), format.raw, Int32(width), Int32(height), 1)
        }
        guard needed > 0 else { throw .invalidSettings("cannot lay out a \(width)x\(height) \(format) image") }
        guard bytes.count >= Int(needed) else {
            throw .invalidSettings("a \(width)x\(height) \(format) frame needs \(needed) bytes; the buffer has \(bytes.count)")
        }
        let constPlanes = planes.map { UnsafePointer<UInt8>($0) }
        return try constPlanes.withUnsafeBufferPointer { planePointer throws(WriterError) in
            try strides.withUnsafeBufferPointer { stridePointer throws(WriterError) in
                try body(planePointer.baseAddress!, stridePointer.baseAddress!)
            }
        }
    }

    /// Hands the planes of an AVFrame (a pixel buffer's, or a decoder's) to `body`.
    static func with<T>(_ frame: UnsafeMutablePointer<AVFrame>,
                        _ body: (UnsafePointer<UnsafePointer<UInt8>?>, UnsafePointer<Int32>) throws(WriterError) -> T) throws(WriterError) -> T {
        try withUnsafePointer(to: &frame.pointee.data) { data throws(WriterError) in
            try withUnsafePointer(to: &frame.pointee.linesize) { lines throws(WriterError) in
                try data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes throws(WriterError) in
                    try lines.withMemoryRebound(to: Int32.self, capacity: 8) { strides throws(WriterError) in
                        try body(planes, strides)
                    }
                }
            }
        }
    }

    /// Points `frame`'s planes at `bytes` (laid out as `with(_:format:…)`
    /// does, nothing copied), sets its format and size, and hands it to
    /// `body`: a capture buffer as libswscale's source.
    static func withFrame<T>(_ frame: UnsafeMutablePointer<AVFrame>, over bytes: UnsafeRawBufferPointer, format: PixelFormat,
                             width: Int, height: Int, bytesPerRow: Int?,
                             _ body: (UnsafeMutablePointer<AVFrame>) throws(WriterError) -> T) throws(WriterError) -> T {
        try with(bytes, format: format, width: width, height: height, bytesPerRow: bytesPerRow) { planes, strides throws(WriterError) in
            withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                    for plane in 0..<4 { data[plane] = UnsafeMutablePointer(mutating: planes[plane]) }
                }
            }
            withUnsafeMutablePointer(to: &frame.pointee.linesize) { lines in
                lines.withMemoryRebound(to: Int32.self, capacity: 8) { lines in
                    for plane in 0..<4 { lines[plane] = strides[plane] }
                }
            }
            frame.pointee.format = format.raw.rawValue
            frame.pointee.width = Int32(width)
            frame.pointee.height = Int32(height)
            return try body(frame)
        }
    }
}
