import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Still image formats a frame can be saved as.
public enum ImageFormat: String, Sendable, CaseIterable, Codable {
    case png, jpeg, ppm

    /// The format a file name's extension implies (.png, .jpg/.jpeg, .ppm), or nil.
    public init?(path: String) {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "png": self = .png
        case "jpg", "jpeg": self = .jpeg
        case "ppm": self = .ppm
        default: return nil
        }
    }

    /// The pixel format images of this kind are encoded from.
    public var pixelFormat: PixelFormat {
        switch self {
        case .png, .ppm: return .rgb24
        case .jpeg: return .yuvj420p
        }
    }
}

/// Saves images, creating each file new (never overwriting, never following
/// a symbolic link); a file that cannot be completed is removed.
public enum ImageFile {
    /// The encoded bytes of `buffer` (which must be in `format.pixelFormat`).
    /// `quality` (1 to 100) applies to JPEG; nil gives the highest quantizer setting (2).
    public static func encode(_ buffer: PixelBuffer, as format: ImageFormat, quality: Int? = nil) throws(WriterError) -> [UInt8] {
        guard buffer.pixelFormat == format.pixelFormat else {
            throw .invalidSettings("a \(format.rawValue) image is made from \(format.pixelFormat), not \(buffer.pixelFormat)")
        }
        if format == .ppm {
            // Binary PPM: a text header and the RGB rows, packed.
            var bytes = Array("P6\n\(buffer.width) \(buffer.height)\n255\n".utf8)
            let rowBytes = buffer.width * 3
            bytes.reserveCapacity(bytes.count + rowBytes * buffer.height)
            let stride = buffer.bytesPerRow(plane: 0)
            buffer.withUnsafeBytes(plane: 0) { plane in
                for row in 0..<buffer.height {
                    bytes += plane[(row * stride)..<(row * stride + rowBytes)]
                }
            }
            return bytes
        }
        FFmpegLogging.configure()
        let name = format == .png ? "png" : "mjpeg"
        guard let codec = avcodec_find_encoder_by_name(name) else { throw .encoderNotFound(codec: name, tried: [name]) }
        guard let context = avcodec_alloc_context3(codec) else { throw .ffmpeg(FFmpegError(call: "avcodec_alloc_context3", code: cffmpeg_averror(ENOMEM))) }
        var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
        defer { avcodec_free_context(&contextPointer) }
        context.pointee.width = Int32(buffer.width)
        context.pointee.height = Int32(buffer.height)
        context.pointee.pix_fmt = format.pixelFormat.raw
        context.pointee.time_base = AVRational(num: 1, den: 25)
        if format == .jpeg {
            context.pointee.color_range = AVCOL_RANGE_JPEG
            context.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
            context.pointee.global_quality = Int32(jpegQuantizer(quality: quality)) * FF_QP2LAMBDA
        }
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_open2(\(name))", code: opened)) }
        // With a fixed quantizer the encoder takes it from the frame, not from the context.
        let quality = buffer.frame.pointee.quality
        buffer.frame.pointee.quality = context.pointee.global_quality
        defer { buffer.frame.pointee.quality = quality }
        let sent = avcodec_send_frame(context, buffer.frame)
        guard sent >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_send_frame(\(name))", code: sent)) }
        _ = avcodec_send_frame(context, nil)
        guard let packet = av_packet_alloc() else { throw .ffmpeg(FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM))) }
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&packetPointer) }
        let received = avcodec_receive_packet(context, packet)
        guard received >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_receive_packet(\(name))", code: received)) }
        return Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
    }

    /// The MJPEG quantizer (2 best … 31 smallest) for a quality of 1 to 100.
    static func jpegQuantizer(quality: Int?) -> Int {
        guard let quality else { return 2 }
        let clamped = min(max(quality, 1), 100)
        return 2 + Int((Double(100 - clamped) * 29 / 99).rounded())
    }

    /// Writes `bytes` to a new file at `path`. Fails if anything exists
    /// there; removes the file if writing it fails.
    public static func write(_ bytes: [UInt8], to path: String) throws(WriterError) {
        let file = try OutputFile(creating: path)
        do {
            try file.write(bytes, at: 0)
            try file.syncAndClose()
        } catch {
            file.remove()
            throw .io(path: path, error: error)
        }
    }
}
