import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// An open libavcodec video encoder with the conversion in front of it:
/// frames in any format libswscale reads are converted once, into one
/// reused frame in the encoder's pixel format and size. Same-size 4:2:2 to
/// 4:2:0 is done by `ChromaSubsampler` instead, and where the encoder copies
/// its input (x264, x265) a planar source's luma is lent to it, not copied.
final class VideoEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let encoderName: String
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private var scaler: OpaquePointer?
    /// Whether the encoder copies each picture into its own memory while it
    /// is sent (x264 and x265 do), so that a source's luma plane can be lent
    /// to it for the call instead of being copied first.
    private let copiesPictures: Bool
    /// The frame that carries a lent luma plane, and the buffer of the chroma
    /// planes converted for it (reused while the encoder holds no reference).
    private let lendingFrame: UnsafeMutablePointer<AVFrame>
    private var chromaBuffer: UnsafeMutablePointer<AVBufferRef>?
    /// How many times a new conversion buffer had to be allocated (1 in
    /// steady state: the first frame's).
    private(set) var bufferAllocations = 0
    /// Whether a frame, and the end of the stream, were sent.
    private var sentFrames = false
    private var flushed = false

    var timeBase: AVRational { context.pointee.time_base }

    init(settings: VideoOutputSettings, timeBase: AVRational, globalHeader: Bool) throws(WriterError) {
        guard settings.width > 0, settings.height > 0, settings.width <= 16384, settings.height <= 16384 else {
            throw .invalidSettings("frame size \(settings.width)x\(settings.height) is out of range")
        }
        FFmpegLogging.configure()
        guard let (name, codec) = EncoderCatalog.firstEncoder(settings.codec.encoderNames) else {
            throw .encoderNotFound(codec: settings.codec.rawValue, tried: settings.codec.encoderNames)
        }
        let pixelFormat = try VideoEncoder.choosePixelFormat(settings: settings, codec: codec, name: name)
        guard let context = avcodec_alloc_context3(codec) else { throw .ffmpeg(FFmpegError(call: "avcodec_alloc_context3", code: cffmpeg_averror(ENOMEM))) }
        var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
        context.pointee.width = Int32(settings.width)
        context.pointee.height = Int32(settings.height)
        context.pointee.pix_fmt = pixelFormat
        context.pointee.time_base = timeBase
        context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        // Rate control budgets bits per frame from the rate: an encoder told
        // none would take the time base as its rate (grey pictures at a bit
        // rate), so one told nothing is opened at the provisional 30 fps.
        let frameDuration = settings.expectedFrameDuration.flatMap { $0.isNumeric && $0.value > 0 ? $0 : nil }
            ?? AssetWriterInput.provisionalFrameDuration
        if let numerator = Int32(exactly: frameDuration.value) {
            context.pointee.framerate = AVRational(num: frameDuration.timescale, den: numerator)
        }
        if pixelFormat == AV_PIX_FMT_YUVJ420P || pixelFormat == AV_PIX_FMT_YUVJ422P || pixelFormat == AV_PIX_FMT_YUVJ444P {
            context.pointee.color_range = AVCOL_RANGE_JPEG
        }
        if let bitRate = settings.bitRate {
            guard bitRate > 0 else { avcodec_free_context(&contextPointer); throw .invalidSettings("bit rate must be positive") }
            context.pointee.bit_rate = Int64(bitRate)
        }
        var gop = settings.maxKeyFrameInterval
        if let interval = gop, interval <= 0 {
            avcodec_free_context(&contextPointer)
            throw .invalidSettings("keyframe interval must be at least 1 frame")
        }
        // A keyframe interval in time also bounds the GOP, for encoders that
        // do not take forced keyframes.
        if let duration = settings.maxKeyFrameIntervalDuration, let frame = settings.expectedFrameDuration,
           duration.isNumeric, frame.isNumeric, frame > .zero, duration > .zero {
            let frames = Int((duration.seconds / frame.seconds).rounded(.down))
            if frames >= 1 { gop = min(gop ?? .max, frames) }
        }
        if let gop { context.pointee.gop_size = Int32(clamping: gop) }
        if globalHeader { context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }

        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        func set(_ key: String, _ value: String) { av_dict_set(&options, key, value, 0) }
        switch name {
        case "libx264", "libx265":
            set("forced-idr", "1")
            if let preset = settings.preset {
                // x264 and x265 print an unknown preset's name on stderr themselves; refuse it first.
                guard VideoOutputSettings.x26xPresets.contains(preset) else {
                    avcodec_free_context(&contextPointer)
                    throw .invalidSettings("'\(preset)' is not a \(name) preset; use " + VideoOutputSettings.x26xPresets.joined(separator: ", "))
                }
                set("preset", preset)
            }
            if let quality = settings.quality { set("crf", String(quality)) }
        case "libvpx-vp9":
            set("deadline", "realtime")
            set("cpu-used", settings.preset ?? "8")
            set("row-mt", "1")
            if let quality = settings.quality {
                set("crf", String(quality))
                if settings.bitRate == nil { context.pointee.bit_rate = 0 }
            }
        case "libaom-av1":
            set("usage", "realtime")
            set("cpu-used", settings.preset ?? "8")
            if let quality = settings.quality { set("crf", String(quality)) }
        case "libsvtav1":
            set("preset", settings.preset ?? "10")
            if let quality = settings.quality { set("crf", String(quality)) }
        case "librav1e":
            set("speed", settings.preset ?? "10")
            if let quality = settings.quality { set("qp", String(quality)) }
        case "mjpeg":
            if let quality = settings.quality {
                guard (2...31).contains(quality) else {
                    avcodec_free_context(&contextPointer)
                    throw .invalidSettings("MJPEG quality is a quantizer from 2 (best) to 31; \(quality) is outside it")
                }
                context.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
                context.pointee.global_quality = Int32(quality) * FF_QP2LAMBDA
            }
        default:
            break
        }
        for (key, value) in settings.encoderOptions.sorted(by: { $0.key < $1.key }) { set(key, value) }

        let opened = avcodec_open2(context, codec, &options)
        if opened < 0 {
            avcodec_free_context(&contextPointer)
            throw .invalidSettings("\(name) refused the settings (\(FFmpegError(call: "avcodec_open2", code: opened).reason))")
        }
        if let unused = av_dict_get(options, "", nil, AV_DICT_IGNORE_SUFFIX) {
            let key = String(cString: unused.pointee.key)
            avcodec_free_context(&contextPointer)
            throw .invalidSettings("\(name) has no option '\(key)'")
        }
        guard let frame = av_frame_alloc(), let packet = av_packet_alloc(), let lendingFrame = av_frame_alloc() else {
            avcodec_free_context(&contextPointer)
            throw .ffmpeg(FFmpegError(call: "av_frame_alloc", code: cffmpeg_averror(ENOMEM)))
        }
        frame.pointee.width = context.pointee.width
        frame.pointee.height = context.pointee.height
        frame.pointee.format = pixelFormat.rawValue
        frame.pointee.color_range = context.pointee.color_range
        self.context = context
        self.encoderName = name
        self.frame = frame
        self.packet = packet
        self.lendingFrame = lendingFrame
        copiesPictures = name == "libx264" || name == "libx265"
    }

    deinit {
        if encoderName == "libsvtav1" && sentFrames && !flushed {
            // SVT-AV1 closes only after it has seen the end of the stream:
            // freed with frames inside (a cancelled file) it waits forever
            // for a packet. Its remaining output is dropped. (One that was
            // never sent a frame waits forever either way: see
            // `AssetWriterInput.prepare`.)
            if avcodec_send_frame(context, nil) >= 0 {
                while avcodec_receive_packet(context, packet) >= 0 { av_packet_unref(packet) }
            }
        }
        var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&contextPointer)
        var framePointer: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&framePointer)
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packetPointer)
        var lendingPointer: UnsafeMutablePointer<AVFrame>? = lendingFrame
        av_frame_free(&lendingPointer)
        av_buffer_unref(&chromaBuffer)
        sws_freeContext(scaler)
    }

    private static func choosePixelFormat(settings: VideoOutputSettings, codec: UnsafePointer<AVCodec>, name: String) throws(WriterError) -> AVPixelFormat {
        var supported = [AVPixelFormat]()
        if var list = codec.pointee.pix_fmts {
            while list.pointee != AV_PIX_FMT_NONE {
                supported.append(list.pointee)
                list += 1
            }
        }
        if let wanted = settings.pixelFormat {
            guard supported.isEmpty || supported.contains(wanted.raw) else {
                let names = supported.map { PixelFormat(raw: $0).name }.joined(separator: ", ")
                throw .invalidSettings("\(name) does not encode \(wanted); it takes \(names)")
            }
            return wanted.raw
        }
        if name == "mjpeg", supported.contains(AV_PIX_FMT_YUVJ420P) { return AV_PIX_FMT_YUVJ420P }
        if supported.isEmpty || supported.contains(AV_PIX_FMT_YUV420P) { return AV_PIX_FMT_YUV420P }
        return supported[0]
    }

    /// Converts one image into the encoder's frame and sends it. `planes`
    /// and `strides` describe the source as FFmpeg does (up to 4 planes).
    func encode(planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>, format: AVPixelFormat,
                width: Int32, height: Int32, pts: Int64, forceKeyframe: Bool,
                sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        // Same-size 4:2:2 to 4:2:0 needs no scaler; everything else goes through libswscale.
        let subsampler = width == context.pointee.width && height == context.pointee.height
            ? ChromaSubsampler(from: format, to: context.pointee.pix_fmt, width: Int(width)) : nil
        if let subsampler, subsampler.hasLumaPlane, copiesPictures, strides[0] > 0 {
            try encodeLendingLuma(subsampler: subsampler, planes: planes, strides: strides, pts: pts, forceKeyframe: forceKeyframe, sink: sink)
            return
        }
        if subsampler == nil {
            scaler = sws_getCachedContext(scaler, width, height, format,
                                          context.pointee.width, context.pointee.height, context.pointee.pix_fmt,
                                          SWS_BICUBIC, nil, nil, nil)
            guard scaler != nil else {
                throw .invalidSettings("cannot convert \(PixelFormat(raw: format)) \(width)x\(height) to \(PixelFormat(raw: context.pointee.pix_fmt))")
            }
        }
        if frame.pointee.buf.0 == nil {
            bufferAllocations += 1
            try check("av_frame_get_buffer") { av_frame_get_buffer(frame, 0) }
        } else if av_frame_is_writable(frame) == 0 {
            // The encoder still holds the previous frame: it gets a fresh buffer.
            bufferAllocations += 1
            try check("av_frame_make_writable") { av_frame_make_writable(frame) }
        }
        let converted = withUnsafeMutablePointer(to: &frame.pointee.data) { data in
            withUnsafeMutablePointer(to: &frame.pointee.linesize) { lines in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { dst in
                    lines.withMemoryRebound(to: Int32.self, capacity: 8) { dstStride in
                        guard let subsampler else { return sws_scale(scaler, planes, strides, 0, height, dst, dstStride) }
                        return subsampler.convert(planes: planes, strides: strides, height: Int(height), into: dst, destinationStrides: dstStride)
                            ? height : cffmpeg_averror(EINVAL)
                    }
                }
            }
        }
        guard converted > 0 else { throw .ffmpeg(FFmpegError(call: "sws_scale", code: converted < 0 ? converted : cffmpeg_averror(EINVAL))) }
        frame.pointee.pts = pts
        frame.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        sentFrames = true
        try check("avcodec_send_frame(\(encoderName))") { avcodec_send_frame(context, frame) }
        try drain(sink)
    }

    /// Sends a frame whose luma plane is the source's own, lent for the call
    /// (the encoder copies it), and whose chroma planes are converted into
    /// `chromaBuffer`: no luma byte is copied before the encoder's own copy.
    private func encodeLendingLuma(subsampler: ChromaSubsampler, planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>,
                                   pts: Int64, forceKeyframe: Bool,
                                   sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        let width = Int(context.pointee.width), height = Int(context.pointee.height)
        // Rows of 64 bytes' alignment, as av_frame_get_buffer gives, for the encoder's SIMD loads.
        let chromaStride = ((width + 1) / 2 + 63) & ~63
        let planeSize = chromaStride * ((height + 1) / 2)
        if chromaBuffer == nil || av_buffer_is_writable(chromaBuffer) == 0 {
            av_buffer_unref(&chromaBuffer)
            chromaBuffer = av_buffer_alloc(2 * planeSize + Int(AV_INPUT_BUFFER_PADDING_SIZE))
            guard chromaBuffer != nil else { throw .ffmpeg(FFmpegError(call: "av_buffer_alloc", code: cffmpeg_averror(ENOMEM))) }
            bufferAllocations += 1
        }
        guard let lumaPlane = planes[0], let chroma = chromaBuffer?.pointee.data else { throw .invalidState("a frame has no luma plane") }
        let lumaStride = Int(strides[0])
        // The luma buffer frees nothing: the caller owns the memory, and the
        // check below makes sure the encoder let go of it before returning.
        var luma = av_buffer_create(UnsafeMutablePointer(mutating: lumaPlane), lumaStride * height, { _, _ in }, nil,
                                    Int32(AV_BUFFER_FLAG_READONLY))
        guard luma != nil else { throw .ffmpeg(FFmpegError(call: "av_buffer_create", code: cffmpeg_averror(ENOMEM))) }
        var watch: UnsafeMutablePointer<AVBufferRef>? = av_buffer_ref(luma)
        defer { av_buffer_unref(&watch) }
        guard subsampler.convertChroma(planes: planes, strides: strides, height: height, u: chroma, uStride: chromaStride,
                                       v: chroma + planeSize, vStride: chromaStride) else {
            av_buffer_unref(&luma)
            throw .invalidState("a 4:2:2 frame is missing a chroma plane")
        }
        let lent = lendingFrame
        lent.pointee.width = context.pointee.width
        lent.pointee.height = context.pointee.height
        lent.pointee.format = context.pointee.pix_fmt.rawValue
        lent.pointee.color_range = context.pointee.color_range
        lent.pointee.buf.0 = luma
        lent.pointee.buf.1 = av_buffer_ref(chromaBuffer)
        lent.pointee.data.0 = UnsafeMutablePointer(mutating: lumaPlane)
        lent.pointee.data.1 = chroma
        lent.pointee.data.2 = chroma + planeSize
        lent.pointee.linesize.0 = Int32(lumaStride)
        lent.pointee.linesize.1 = Int32(chromaStride)
        lent.pointee.linesize.2 = Int32(chromaStride)
        lent.pointee.pts = pts
        lent.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        sentFrames = true
        let sent = avcodec_send_frame(context, lent)
        av_frame_unref(lent)
        if sent < 0 { throw .ffmpeg(FFmpegError(call: "avcodec_send_frame(\(encoderName))", code: sent)) }
        try drain(sink)
        // Receiving until the encoder wants input has made it take the frame in.
        guard av_buffer_get_ref_count(watch) == 1 else {
            throw .invalidState("\(encoderName) kept a reference to a frame lent to it for one call")
        }
    }

    /// Sends the end of the stream and passes on every packet still inside.
    func flush(sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        flushed = true
        let status = avcodec_send_frame(context, nil)
        if status < 0 && status != cffmpeg_AVERROR_EOF {
            throw .ffmpeg(FFmpegError(call: "avcodec_send_frame(\(encoderName))", code: status))
        }
        try drain(sink)
    }

    private func drain(_ sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
        while true {
            let status = avcodec_receive_packet(context, packet)
            if status == cffmpeg_AVERROR_EAGAIN || status == cffmpeg_AVERROR_EOF { return }
            if status < 0 { throw .ffmpeg(FFmpegError(call: "avcodec_receive_packet(\(encoderName))", code: status)) }
            defer { av_packet_unref(packet) }
            try sink(packet)
        }
    }

    private func check(_ name: String, _ body: () -> Int32) throws(WriterError) {
        let status = body()
        if status < 0 { throw .ffmpeg(FFmpegError(call: name, code: status)) }
    }
}
