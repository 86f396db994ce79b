import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// An open libavcodec video encoder with the conversion in front of it:
/// frames in any format libswscale reads are converted once, into one
/// reused frame in the encoder's pixel format and size.
final class VideoEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let encoderName: String
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private var scaler: OpaquePointer?
    /// How many times a new conversion buffer had to be allocated (1 in
    /// steady state: the first frame's).
    private(set) var bufferAllocations = 0

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
        if let frameDuration = settings.expectedFrameDuration, frameDuration.isNumeric, frameDuration.value > 0,
           let numerator = Int32(exactly: frameDuration.value) {
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
        guard let frame = av_frame_alloc(), let packet = av_packet_alloc() else {
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
    }

    deinit {
        var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&contextPointer)
        var framePointer: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&framePointer)
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packetPointer)
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
        scaler = sws_getCachedContext(scaler, width, height, format,
                                      context.pointee.width, context.pointee.height, context.pointee.pix_fmt,
                                      SWS_BICUBIC, nil, nil, nil)
        guard scaler != nil else {
            throw .invalidSettings("cannot convert \(PixelFormat(raw: format)) \(width)x\(height) to \(PixelFormat(raw: context.pointee.pix_fmt))")
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
                        sws_scale(scaler, planes, strides, 0, height, dst, dstStride)
                    }
                }
            }
        }
        guard converted > 0 else { throw .ffmpeg(FFmpegError(call: "sws_scale", code: converted < 0 ? converted : cffmpeg_averror(EINVAL))) }
        frame.pointee.pts = pts
        frame.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try check("avcodec_send_frame(\(encoderName))") { avcodec_send_frame(context, frame) }
        try drain(sink)
    }

    /// Sends the end of the stream and passes on every packet still inside.
    func flush(sink: (UnsafeMutablePointer<AVPacket>) throws(WriterError) -> Void) throws(WriterError) {
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
