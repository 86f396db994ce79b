import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// An open input file: a libavformat demuxer context that this object owns
/// and closes.
final class MediaFile {
    let path: String
    let context: UnsafeMutablePointer<AVFormatContext>

    init(path: String) throws(PlaybackError) {
        FFmpegLogging.configure()
        var info = stat()
        if stat(path, &info) != 0 {
            switch errno {
            case ENOENT, ENOTDIR: throw .noSuchFile(path: path)
            case EACCES: throw .permissionDenied(path: path)
            default: throw .io(path: path, error: SystemCallError(call: "stat(\(path))", errno: errno))
            }
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notAFile(path: path) }
        guard access(path, R_OK) == 0 else { throw .permissionDenied(path: path) }
        if info.st_size == 0 { throw .notMedia(path: path, reason: "the file is empty") }
        var context: UnsafeMutablePointer<AVFormatContext>?
        let opened = avformat_open_input(&context, path, nil, nil)
        guard opened >= 0, let context else {
            let error = FFmpegError(call: "avformat_open_input", code: opened)
            if error.isInvalidData { throw .notMedia(path: path, reason: "no known container format") }
            if let code = error.errno { throw .io(path: path, error: SystemCallError(call: "open(\(path))", errno: code)) }
            throw .notMedia(path: path, reason: error.reason)
        }
        self.path = path
        self.context = context
        let found = avformat_find_stream_info(context, nil)
        if found < 0 {
            let error = FFmpegError(call: "avformat_find_stream_info", code: found)
            throw .corrupt(path: path, reason: error.reason)
        }
        if context.pointee.nb_streams == 0 { throw .notMedia(path: path, reason: "it has no tracks") }
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&pointer)
    }

    var streams: [UnsafeMutablePointer<AVStream>] {
        (0..<Int(context.pointee.nb_streams)).compactMap { context.pointee.streams[$0] }
    }

    /// The index of the best stream of a type (the default track, as
    /// libavformat picks it), or nil.
    func bestStream(_ type: AVMediaType) -> Int? {
        let index = av_find_best_stream(context, type, -1, -1, nil, 0)
        return index >= 0 ? Int(index) : nil
    }

    /// The earliest start among the streams, in seconds as a MediaTime
    /// (microseconds), or zero.
    var startTime: MediaTime {
        let start = context.pointee.start_time
        return start == cffmpeg_AV_NOPTS_VALUE ? .zero : MediaTime(value: start, timescale: Int32(AV_TIME_BASE))
    }

    var duration: MediaTime {
        let duration = context.pointee.duration
        return duration == cffmpeg_AV_NOPTS_VALUE || duration < 0 ? .indefinite : MediaTime(value: duration, timescale: Int32(AV_TIME_BASE))
    }
}

/// An open libavcodec decoder for one stream.
final class Decoder {
    let context: UnsafeMutablePointer<AVCodecContext>

    init(stream: UnsafeMutablePointer<AVStream>, path: String) throws(PlaybackError) {
        let parameters = stream.pointee.codecpar!
        let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else { throw .decoderNotFound(path: path, codec: name) }
        guard let context = avcodec_alloc_context3(codec) else {
            throw .ffmpeg(path: path, error: FFmpegError(call: "avcodec_alloc_context3", code: cffmpeg_averror(ENOMEM)))
        }
        var pointer: UnsafeMutablePointer<AVCodecContext>? = context
        var status = avcodec_parameters_to_context(context, parameters)
        if status >= 0 {
            context.pointee.pkt_timebase = stream.pointee.time_base
            context.pointee.thread_count = 0
            status = avcodec_open2(context, codec, nil)
        }
        if status < 0 {
            avcodec_free_context(&pointer)
            throw .ffmpeg(path: path, error: FFmpegError(call: "avcodec_open2(\(name))", code: status))
        }
        self.context = context
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&pointer)
    }
}
