import CFFmpeg

/// Encodes pictures of one size as JPEG files with libavcodec's MJPEG
/// encoder, keeping its context between pictures (a live view encodes
/// every frame it shows; `ImageFile.encode` makes one context per photo).
/// Owned by one thread.
final class JPEGEncoder {
    let width: Int
    let height: Int
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var nextTimestamp: Int64 = 0

    /// An encoder of `width`x`height` pictures in `ImageFormat.jpeg.pixelFormat` at `quality` (1 to 100).
    init(width: Int, height: Int, quality: Int) throws(WriterError) {
        FFmpegLogging.configure()
        self.width = width
        self.height = height
        guard let codec = avcodec_find_encoder_by_name("mjpeg") else { throw .encoderNotFound(codec: "mjpeg", tried: ["mjpeg"]) }
        context = avcodec_alloc_context3(codec)
        packet = av_packet_alloc()
        guard let context, packet != nil else { throw .ffmpeg(FFmpegError(call: "avcodec_alloc_context3", code: cffmpeg_averror(ENOMEM))) }
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = ImageFormat.jpeg.pixelFormat.raw
        context.pointee.color_range = AVCOL_RANGE_JPEG
        context.pointee.time_base = AVRational(num: 1, den: 1000)
        context.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
        context.pointee.global_quality = Int32(ImageFile.jpegQuantizer(quality: quality)) * FF_QP2LAMBDA
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_open2(mjpeg)", code: opened)) }
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
    }

    /// The JPEG file of `picture` (this encoder's size, in yuvj420p).
    func encode(_ picture: PixelBuffer) throws(WriterError) -> [UInt8] {
        guard let context, let packet else { return [] }
        picture.frame.pointee.pts = nextTimestamp
        // With a fixed quantizer the encoder takes it from each frame, not from the context.
        picture.frame.pointee.quality = context.pointee.global_quality
        nextTimestamp += 1
        let sent = avcodec_send_frame(context, picture.frame)
        guard sent >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_send_frame(mjpeg)", code: sent)) }
        let received = avcodec_receive_packet(context, packet)
        guard received >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_receive_packet(mjpeg)", code: received)) }
        defer { av_packet_unref(packet) }
        return Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
    }
}
