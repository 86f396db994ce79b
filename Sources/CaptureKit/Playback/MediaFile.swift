import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// An open input file: a libavformat demuxer context that this object owns
/// and closes.
final class MediaFile {
    let path: String
    let context: UnsafeMutablePointer<AVFormatContext>
    /// For a cut-off file: the reader that stops at its last complete box.
    private var limitedReader: TruncatedFileReader?

    init(path: String) throws(PlaybackError) {
        FFmpegLogging.configure()
        let info: Glibc.stat
        do {
            info = try Posix.stat(path)
        } catch {
            switch error.errno {
            case ENOENT, ENOTDIR: throw .noSuchFile(path: path)
            case EACCES: throw .permissionDenied(path: path)
            default: throw .io(path: path, error: error)
            }
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notAFile(path: path) }
        guard Posix.isAccessible(path, R_OK) else { throw .permissionDenied(path: path) }
        if info.st_size == 0 { throw .notMedia(path: path, reason: "the file is empty") }
        var context: UnsafeMutablePointer<AVFormatContext>?
        // A cut-off MP4/QuickTime file (a recording killed mid-write) is
        // read up to its last complete box, so that a partial fragment at
        // the end cannot spoil the fragments before it.
        if let complete = TruncatedFileReader.completeLength(path: path, size: Int64(info.st_size)) {
            let reader = try TruncatedFileReader(path: path, length: complete)
            guard let allocated = avformat_alloc_context() else {
                throw .ffmpeg(path: path, error: FFmpegError(call: "avformat_alloc_context", code: cffmpeg_averror(ENOMEM)))
            }
            allocated.pointee.pb = reader.context
            allocated.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            context = allocated
            limitedReader = reader
        }
        let opened = avformat_open_input(&context, path, nil, nil)
        guard opened >= 0, let context else {
            limitedReader = nil
            let error = FFmpegError(call: "avformat_open_input", code: opened)
            if error.isInvalidData {
                if let recognized = MediaFile.recognizedFormat(path: path) {
                    throw .corrupt(path: path, reason: "a \(recognized) file libavformat cannot read; it may be cut short")
                }
                throw .notMedia(path: path, reason: "no known container format")
            }
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

    /// The container libavformat's probe recognizes in the file's first
    /// bytes (by content, not name), or nil.
    static func recognizedFormat(path: String) -> String? {
        guard let fd = try? Posix.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { try? Posix.close(fd, path: path) }
        let size = 1 << 16
        var bytes = [UInt8](repeating: 0, count: size)
        guard let got = try? Posix.pread(fd, into: &bytes, at: 0, path: path), got > 0 else { return nil }
        // The probe reads the padding after the data: zeros.
        bytes += repeatElement(0, count: Int(AVPROBE_PADDING_SIZE))
        return bytes.withUnsafeMutableBufferPointer { buffer -> String? in
            var probe = AVProbeData()
            probe.buf = buffer.baseAddress
            probe.buf_size = Int32(got)
            var score: Int32 = 0
            let format = "".withCString { empty -> UnsafePointer<AVInputFormat>? in
                probe.filename = empty
                return av_probe_input_format3(&probe, 1, &score)
            }
            guard let format, score >= AVPROBE_SCORE_EXTENSION else { return nil }
            return format.pointee.long_name.map { String(cString: $0) } ?? String(cString: format.pointee.name)
        }
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&pointer)
        limitedReader = nil
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

    /// Where item time 0 lies: the start of containers whose timestamps
    /// begin anywhere (MPEG-TS, MPEG-PS), 0 for the others, whose timeline
    /// starts at 0 by definition (a sample may still start before it, such
    /// as audio priming in a fragmented MP4).
    var timelineOrigin: MediaTime {
        context.pointee.iformat.pointee.flags & AVFMT_TS_DISCONT != 0 ? startTime : .zero
    }

    var duration: MediaTime {
        let duration = context.pointee.duration
        return duration == cffmpeg_AV_NOPTS_VALUE || duration < 0 ? .indefinite : MediaTime(value: duration, timescale: Int32(AV_TIME_BASE))
    }
}

/// An open libavcodec decoder for one stream.
final class Decoder {
    let context: UnsafeMutablePointer<AVCodecContext>

    /// A decoder for `stream` of the file at `path`, with as many threads as libavcodec likes.
    init(stream: UnsafeMutablePointer<AVStream>, path: String) throws(PlaybackError) {
        let parameters = stream.pointee.codecpar!
        let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else { throw .decoderNotFound(path: path, codec: name) }
        do {
            context = try Self.open(codec, name: name) { context in
                context.pointee.pkt_timebase = stream.pointee.time_base
                context.pointee.thread_count = 0
                return avcodec_parameters_to_context(context, parameters)
            }
        } catch {
            throw .ffmpeg(path: path, error: error)
        }
    }

    /// A decoder for frames of `codecName` that come without a container
    /// (a camera's, written again by an encoder). `configuration` is the
    /// extradata they need and do not carry (a file's avcC/hvcC record; empty
    /// when it is in band). One thread, so that each frame comes out as soon
    /// as the codec allows.
    init(codecName: String, configuration: [UInt8]) throws(FFmpegError) {
        guard let codec = avcodec_find_decoder_by_name(codecName) else {
            throw FFmpegError(call: "avcodec_find_decoder_by_name(\(codecName))", code: cffmpeg_AVERROR_DECODER_NOT_FOUND)
        }
        context = try Self.open(codec, name: codecName) { context in
            context.pointee.thread_count = 1
            // A JPEG cut short (a USB transfer that ended early, often a
            // camera's first frame) decodes without an error into a picture
            // whose missing part is grey; told to, the decoder refuses it
            // (AVERROR_INVALIDDATA), and the frame is lost instead.
            if codecName == "mjpeg" { context.pointee.err_recognition |= AV_EF_EXPLODE }
            guard !configuration.isEmpty else { return 0 }
            guard let extradata = av_mallocz(configuration.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else { return cffmpeg_averror(ENOMEM) }
            configuration.withUnsafeBytes { extradata.copyMemory(from: $0.baseAddress!, byteCount: configuration.count) }
            // The context owns it from here (avcodec_free_context frees it).
            context.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
            context.pointee.extradata_size = Int32(configuration.count)
            return 0
        }
    }

    /// Allocates a context for `codec`, lets `setUp` fill it in (returning a
    /// libav status), and opens it; frees it again on failure.
    private static func open(_ codec: UnsafePointer<AVCodec>, name: String,
                             setUp: (UnsafeMutablePointer<AVCodecContext>) -> Int32) throws(FFmpegError) -> UnsafeMutablePointer<AVCodecContext> {
        guard let context = avcodec_alloc_context3(codec) else { throw FFmpegError(call: "avcodec_alloc_context3", code: cffmpeg_averror(ENOMEM)) }
        var status = setUp(context)
        if status >= 0 { status = avcodec_open2(context, codec, nil) }
        if status < 0 {
            var pointer: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&pointer)
            throw FFmpegError(call: "avcodec_open2(\(name))", code: status)
        }
        return context
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&pointer)
    }
}

/// Reads the first `length` bytes of a file through an AVIOContext, as if
/// the file ended there. Owns the descriptor, the context and its buffer.
final class TruncatedFileReader {
    let context: UnsafeMutablePointer<AVIOContext>
    private let box: Unmanaged<Source>

    final class Source {
        let descriptor: Int32
        let length: Int64
        var position: Int64 = 0
        init(descriptor: Int32, length: Int64) {
            self.descriptor = descriptor
            self.length = length
        }
        deinit { try? Posix.close(descriptor) }
    }

    /// The end of the last complete top-level box of an ISO base media file
    /// whose last box runs past the end of the file; nil for any other file.
    /// A fragment header ('moof') whose media data is missing is left out.
    static func completeLength(path: String, size: Int64) -> Int64? {
        guard let fd = try? Posix.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { try? Posix.close(fd, path: path) }
        var offset: Int64 = 0
        var lastEnd: Int64 = 0
        var pendingFragment: Int64?
        var header = [UInt8](repeating: 0, count: 16)
        var first = true
        while offset + 8 <= size {
            guard let got = try? Posix.pread(fd, into: &header, at: offset, path: path), got >= 8 else { return nil }
            var boxSize = Int64(BigEndian.uint32(header, at: 0))
            let type = BigEndian.fourCC(header[...], at: 4)
            if first {
                guard ["ftyp", "moov", "styp"].contains(type) else { return nil }
                first = false
            }
            if boxSize == 1 {
                guard got >= 16 else { break }
                boxSize = Int64(bitPattern: BigEndian.uint64(header, at: 8))
            } else if boxSize == 0 {
                return nil
            }
            guard boxSize >= 8 else { return nil }
            if offset + boxSize > size { break }
            if type == "moof" { pendingFragment = offset } else if type == "mdat" { pendingFragment = nil }
            offset += boxSize
            lastEnd = offset
        }
        guard lastEnd < size else { return nil }
        return pendingFragment ?? lastEnd
    }

    init(path: String, length: Int64) throws(PlaybackError) {
        let fd: Int32
        do {
            fd = try Posix.open(path, O_RDONLY | O_CLOEXEC)
        } catch {
            throw .io(path: path, error: error)
        }
        let source = Source(descriptor: fd, length: length)
        let size: Int32 = 1 << 16
        guard let buffer = av_malloc(Int(size)) else {
            throw .ffmpeg(path: path, error: FFmpegError(call: "av_malloc", code: cffmpeg_averror(ENOMEM)))
        }
        let retained = Unmanaged.passRetained(source)
        guard let context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), size, 0, retained.toOpaque(),
                                               truncatedRead, nil, truncatedSeek) else {
            av_free(buffer)
            retained.release()
            throw .ffmpeg(path: path, error: FFmpegError(call: "avio_alloc_context", code: cffmpeg_averror(ENOMEM)))
        }
        self.context = context
        self.box = retained
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVIOContext>? = context
        av_freep(&pointer!.pointee.buffer)
        avio_context_free(&pointer)
        box.release()
    }
}

private func truncatedRead(_ opaque: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
    guard let opaque, let buffer else { return cffmpeg_averror(EINVAL) }
    let source = Unmanaged<TruncatedFileReader.Source>.fromOpaque(opaque).takeUnretainedValue()
    let wanted = min(Int64(size), source.length - source.position)
    if wanted <= 0 { return cffmpeg_AVERROR_EOF }
    let got: Int
    do {
        got = try Posix.pread(source.descriptor, into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(wanted)), at: source.position)
    } catch {
        return cffmpeg_averror(error.errno)
    }
    if got == 0 { return cffmpeg_AVERROR_EOF }
    source.position += Int64(got)
    return Int32(got)
}

private func truncatedSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    guard let opaque else { return Int64(cffmpeg_averror(EINVAL)) }
    let source = Unmanaged<TruncatedFileReader.Source>.fromOpaque(opaque).takeUnretainedValue()
    let target: Int64
    switch whence & ~AVSEEK_FORCE {
    case AVSEEK_SIZE: return source.length
    case SEEK_SET: target = offset
    case SEEK_CUR: target = source.position + offset
    case SEEK_END: target = source.length + offset
    default: return Int64(cffmpeg_averror(EINVAL))
    }
    guard target >= 0 else { return Int64(cffmpeg_averror(EINVAL)) }
    source.position = target
    return target
}
