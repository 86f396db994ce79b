import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Turns captured frames into images: raw frames are read in place (no
/// copy) and converted with libswscale; MJPEG frames are decoded first.
/// Used on a photo output's processing thread only.
final class PhotoFrameConverter {
    private var converters: [String: PixelConverter] = [:]
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var decoderCodec = ""

    deinit {
        if decoder != nil { avcodec_free_context(&decoder) }
    }

    /// `sample` as a new image in `format` at `width` x `height`.
    func image(of sample: VideoSampleBuffer, format: PixelFormat, width: Int, height: Int) throws(PhotoError) -> PixelBuffer {
        FFmpegLogging.configure()
        let key = "\(format.name) \(width)x\(height)"
        let converter: PixelConverter
        if let existing = converters[key] {
            converter = existing
        } else {
            do { converter = try PixelConverter(pixelFormat: format, width: width, height: height) } catch {
                throw .processing(error.description)
            }
            converters[key] = converter
        }
        switch sample.layout {
        case .raw(let pixelFormat, let bytesPerRow):
            return try Self.withFrame(over: sample, pixelFormat: pixelFormat, bytesPerRow: bytesPerRow) { frame throws(PhotoError) in
                do throws(WriterError) { return try converter.convert(frame: frame) } catch { throw .processing(error.description) }
            }
        case .compressed(let codec):
            let decoded = try decode(sample, codec: codec)
            var pointer: UnsafeMutablePointer<AVFrame>? = decoded
            defer { av_frame_free(&pointer) }
            // Decoders of JPEG give the full-range formats (yuvj422p) libswscale reads as is.
            do { return try converter.convert(frame: decoded) } catch { throw .processing(error.description) }
        }
    }

    /// The mean luma of `sample`, 0 (black) to 1 (white), from a small grey copy.
    func meanLuma(of sample: VideoSampleBuffer) throws(PhotoError) -> Double {
        let grey = try image(of: sample, format: .gray8, width: 64, height: 48)
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

    /// One compressed frame, decoded (a frame the caller frees).
    private func decode(_ sample: VideoSampleBuffer, codec name: String) throws(PhotoError) -> UnsafeMutablePointer<AVFrame> {
        FFmpegLogging.configure()
        if decoder == nil || decoderCodec != name {
            if decoder != nil { avcodec_free_context(&decoder) }
            guard let codec = avcodec_find_decoder_by_name(name) else { throw .processing("no \(name) decoder in this FFmpeg") }
            guard let context = avcodec_alloc_context3(codec) else { throw .processing("out of memory") }
            decoder = context
            let opened = avcodec_open2(context, codec, nil)
            guard opened >= 0 else {
                avcodec_free_context(&decoder)
                throw .processing(FFmpegError(call: "avcodec_open2(\(name))", code: opened).description)
            }
            decoderCodec = name
        }
        guard let context = decoder, let packet = av_packet_alloc() else { throw .processing("out of memory") }
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&packetPointer) }
        guard av_new_packet(packet, Int32(sample.bytes.count)) >= 0 else { throw .processing("out of memory") }
        if let base = sample.bytes.baseAddress { packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: sample.bytes.count) }
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        let sent = avcodec_send_packet(context, packet)
        guard sent >= 0 else { throw .processing("the \(name) frame does not decode: \(FFmpegError(call: "avcodec_send_packet", code: sent))") }
        guard let frame = av_frame_alloc() else { throw .processing("out of memory") }
        var received = avcodec_receive_frame(context, frame)
        if received == cffmpeg_averror(EAGAIN) {
            _ = avcodec_send_packet(context, nil)
            received = avcodec_receive_frame(context, frame)
            avcodec_flush_buffers(context)
        }
        guard received >= 0 else {
            var pointer: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&pointer)
            throw .processing("the \(name) frame does not decode: \(FFmpegError(call: "avcodec_receive_frame", code: received))")
        }
        return frame
    }
}
