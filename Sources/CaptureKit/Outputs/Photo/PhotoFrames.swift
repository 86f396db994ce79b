import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Turns captured frames into images: raw frames are read in place (no
/// copy) and converted with libswscale; compressed frames are decoded first,
/// an H.264 or HEVC frame from its keyframe on (see `PhotoFrame`), each
/// photo with a decoder of its own. Used on a photo output's processing thread only.
final class PhotoFrameConverter {
    private var converters: [String: PixelConverter] = [:]

    /// A converter to `format` at `width` x `height`, kept for the next image of that kind.
    private func converter(_ format: PixelFormat, width: Int, height: Int) throws(PhotoError) -> PixelConverter {
        let key = "\(format.name) \(width)x\(height)"
        if let existing = converters[key] { return existing }
        let made: PixelConverter
        do { made = try PixelConverter(pixelFormat: format, width: width, height: height) } catch { throw .processing(error.description) }
        converters[key] = made
        return made
    }

    /// The chosen frame of `photo` as a new image in `format` at `width` x
    /// `height`. `configuration` is the codec configuration compressed frames
    /// do not carry (a file's avcC record; empty for a camera).
    func image(of photo: PhotoFrame, configuration: [UInt8] = [], format: PixelFormat, width: Int, height: Int) throws(PhotoError) -> PixelBuffer {
        FFmpegLogging.configure()
        let sample = photo.chosen
        switch sample.layout {
        case .raw(let pixelFormat, let bytesPerRow):
            let converter = try converter(format, width: width, height: height)
            return try Self.withFrame(over: sample, pixelFormat: pixelFormat, bytesPerRow: bytesPerRow) { frame throws(PhotoError) in
                do throws(WriterError) { return try converter.convert(frame: frame) } catch { throw .processing(error.description) }
            }
        case .compressed(let codec):
            var image: PixelBuffer?
            try pictures(of: photo.frames, codec: codec, configuration: configuration, format: format, width: width, height: height,
                         wanted: { $0 == sample.presentationTime && image == nil }) { picture, _ in image = picture }
            guard let image else {
                throw .processing("the \(codec) frame at \(sample.presentationTime.seconds) s gave no picture")
            }
            return image
        }
    }

    /// Decodes compressed `frames` in order with a fresh decoder, from the
    /// first keyframe on, and hands each picture whose time is `wanted` to
    /// `body`, converted to `format` at `width` x `height`, with its time.
    /// Pictures the decoder holds back (frames reordered) come at the end; a
    /// frame the decoder cannot read (a damaged one) gives no picture.
    func pictures(of frames: [VideoSampleBuffer], codec: String, configuration: [UInt8], format: PixelFormat, width: Int, height: Int,
                  wanted: (MediaTime) -> Bool, _ body: (PixelBuffer, MediaTime) throws(PhotoError) -> Void) throws(PhotoError) {
        FFmpegLogging.configure()
        let converter = try converter(format, width: width, height: height)
        let decoder: CompressedFrameDecoder
        do { decoder = try CompressedFrameDecoder(codecName: codec, configuration: configuration) } catch { throw .processing(error.description) }
        var failure: PhotoError?
        func receive(_ picture: UnsafeMutablePointer<AVFrame>, _ time: MediaTime) throws(WriterError) {
            guard failure == nil, wanted(time) else { return }
            // Decoders of JPEG give the full-range formats (yuvj422p) libswscale reads as is.
            let image = try converter.convert(frame: picture)
            do throws(PhotoError) { try body(image, time) } catch { failure = error }
        }
        do throws(WriterError) {
            for frame in frames where decoder.canStart(at: frame.isKeyframe) {
                do throws(WriterError) {
                    try decoder.decode(frame.bytes, time: frame.presentationTime, receive: receive)
                } catch .damagedSample {
                    // A frame the decoder cannot read is lost on its own, as in a recording.
                }
                if failure != nil { break }
            }
            if failure == nil { try decoder.flush(receive: receive) }
        } catch {
            throw .processing(error.description)
        }
        if let failure { throw failure }
    }

    /// The mean luma of the chosen frame of `photo`, 0 (black) to 1 (white), from a small grey copy.
    func meanLuma(of photo: PhotoFrame, configuration: [UInt8] = []) throws(PhotoError) -> Double {
        let grey = try image(of: photo, configuration: configuration, format: .gray8, width: 64, height: 48)
        let stride = grey.bytesPerRow(plane: 0)
        let total = grey.withUnsafeBytes(plane: 0) { bytes -> Int in
            var sum = 0
            for row in 0..<48 { for column in 0..<64 { sum += Int(bytes[row * stride + column]) } }
            return sum
        }
        return Double(total) / Double(64 * 48 * 255)
    }

    /// An AVFrame whose planes point into the sample's bytes, for the duration of `body`.
    static func withFrame<R>(over sample: VideoSampleBuffer, pixelFormat: PixelFormat, bytesPerRow: Int?,
                             _ body: (UnsafeMutablePointer<AVFrame>) throws(PhotoError) -> R) throws(PhotoError) -> R {
        guard let base = sample.bytes.baseAddress, sample.bytes.count > 0 else { throw .processing("the frame is empty") }
        guard let frame = av_frame_alloc() else { throw .processing("out of memory") }
        var pointer: UnsafeMutablePointer<AVFrame>? = frame
        defer { av_frame_free(&pointer) }
        frame.pointee.width = Int32(sample.width)
        frame.pointee.height = Int32(sample.height)
        frame.pointee.format = pixelFormat.raw.rawValue
        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 4)
        var strides = [Int32](repeating: 0, count: 4)
        let source = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        let needed: Int
        if let bytesPerRow, av_pix_fmt_count_planes(pixelFormat.raw) == 1 {
            planes[0] = source
            strides[0] = Int32(bytesPerRow)
            needed = bytesPerRow * sample.height
        } else {
            needed = Int(av_image_fill_arrays(&planes, &strides, source, pixelFormat.raw, Int32(sample.width), Int32(sample.height), 1))
        }
        guard needed > 0, sample.bytes.count >= needed else {
            throw .processing("a \(sample.width)x\(sample.height) \(pixelFormat) frame needs \(needed) bytes; the camera delivered \(sample.bytes.count)")
        }
        withUnsafeMutableBytes(of: &frame.pointee.data) { data in
            let slots = data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
            for index in 0..<4 { slots[index] = planes[index] }
        }
        withUnsafeMutableBytes(of: &frame.pointee.linesize) { lines in
            let slots = lines.bindMemory(to: Int32.self)
            for index in 0..<4 { slots[index] = strides[index] }
        }
        return try body(frame)
    }
}
