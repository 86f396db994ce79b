import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// One connection to a media server: libavformat's muxer for the stream's
/// container writing to the network. Every blocking call (connecting, the
/// protocol's handshake, each write) runs under a deadline that libavformat
/// polls through its interrupt callback, so a server that does not answer or
/// stops reading costs at most that long.
///
/// Used on one thread (its publisher's).
final class StreamMuxer {
    /// What the video stream is: its codec, size and the parameter sets
    /// (Annex B) that its keyframes carry in band and the header needs.
    struct Video {
        var codecName: String
        var width: Int
        var height: Int
        var parameterSets: [UInt8]
    }

    private let format: UnsafeMutablePointer<AVFormatContext>
    private let deadline: StreamDeadline
    private let packet: UnsafeMutablePointer<AVPacket>
    private var videoStream: Int32?
    private var audioStream: Int32?
    private var audioTimeBase = AVRational(num: 1, den: 48000)
    private var headerWritten = false
    private var closed = false
    private let destination: StreamDestination
    /// Media bytes handed to the muxer (what a container-less count would say).
    private(set) var payloadBytes: Int64 = 0
    /// `bytesWritten` when the connection closed.
    private var finalBytes: Int64 = 0

    private static let nanoseconds = AVRational(num: 1, den: 1_000_000_000)

    /// Connects to `destination` and writes the stream's header: the server
    /// has accepted the stream when this returns. `audio` is the encoder
    /// whose packets will be sent (opened with a global header). Throws the
    /// failure, a timeout after `timeout` nanoseconds, or the stream's cut-off.
    init(destination: StreamDestination, video: Video?, audio: AudioEncoder?, timeout: Int64, deadline: StreamDeadline) throws(WriterError) {
        Self.initializeNetworking()
        FFmpegLogging.configure()
        self.destination = destination
        self.deadline = deadline
        var created: UnsafeMutablePointer<AVFormatContext>?
        let allocated = avformat_alloc_output_context2(&created, nil, destination.format.muxerName, destination.url)
        guard allocated >= 0, let created else {
            throw .ffmpeg(FFmpegError(call: "avformat_alloc_output_context2(\(destination.format.muxerName))", code: allocated))
        }
        guard let packet = av_packet_alloc() else {
            avformat_free_context(created)
            throw .ffmpeg(FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM)))
        }
        format = created
        self.packet = packet
        created.pointee.interrupt_callback = AVIOInterruptCB(callback: { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<StreamDeadline>.fromOpaque(opaque).takeUnretainedValue().hasPassed ? 1 : 0
        }, opaque: Unmanaged.passUnretained(deadline).toOpaque())
        // Each packet goes out as it is written (no batching behind a live
        // picture), and the muxer holds one stream's packets back for the
        // other's at most half a second.
        created.pointee.flush_packets = 1
        created.pointee.max_interleave_delta = 500_000
        do throws(WriterError) {
            if let video { try addVideo(video) }
            if let audio { try addAudio(audio) }
            try connect(timeout: timeout)
        } catch {
            close(gracefully: false)
            throw error
        }
    }

    deinit {
        close(gracefully: false)
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packetPointer)
    }

    private static let networking: Void = { _ = avformat_network_init() }()
    private static func initializeNetworking() { _ = networking }

    private func addVideo(_ video: Video) throws(WriterError) {
        guard let descriptor = avcodec_descriptor_get_by_name(video.codecName) else { throw .invalidSettings("no codec named \(video.codecName)") }
        guard let stream = avformat_new_stream(format, nil) else { throw .ffmpeg(FFmpegError(call: "avformat_new_stream", code: cffmpeg_averror(ENOMEM))) }
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = descriptor.pointee.id
        parameters.pointee.width = Int32(video.width)
        parameters.pointee.height = Int32(video.height)
        parameters.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        if !video.parameterSets.isEmpty {
            guard let extradata = av_mallocz(video.parameterSets.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                throw .ffmpeg(FFmpegError(call: "av_mallocz", code: cffmpeg_averror(ENOMEM)))
            }
            video.parameterSets.withUnsafeBytes { extradata.copyMemory(from: $0.baseAddress!, byteCount: video.parameterSets.count) }
            parameters.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
            parameters.pointee.extradata_size = Int32(video.parameterSets.count)
        }
        stream.pointee.time_base = AVRational(num: 1, den: 90000)
        videoStream = stream.pointee.index
    }

    private func addAudio(_ audio: AudioEncoder) throws(WriterError) {
        guard let stream = avformat_new_stream(format, nil) else { throw .ffmpeg(FFmpegError(call: "avformat_new_stream", code: cffmpeg_averror(ENOMEM))) }
        let copied = avcodec_parameters_from_context(stream.pointee.codecpar, audio.context)
        guard copied >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_parameters_from_context", code: copied)) }
        stream.pointee.time_base = audio.context.pointee.time_base
        audioTimeBase = audio.context.pointee.time_base
        audioStream = stream.pointee.index
    }

    private func connect(timeout: Int64) throws(WriterError) {
        deadline.set(after: timeout)
        defer { deadline.clear() }
        if format.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            var protocolOptions: OpaquePointer?
            defer { av_dict_free(&protocolOptions) }
            // SRT in live mode drops what is still unsent when the socket
            // closes; a second of linger lets the stream's end arrive
            // (unless the URL says otherwise).
            if destination.scheme == "srt", !destination.url.contains("linger=") { av_dict_set(&protocolOptions, "linger", "1", 0) }
            let opened = avio_open2(&format.pointee.pb, destination.url, AVIO_FLAG_WRITE, &format.pointee.interrupt_callback, &protocolOptions)
            guard opened >= 0 else {
                // libavformat tells a name that does not resolve only as an I/O error; say which host.
                if opened != cffmpeg_AVERROR_EXIT, let unknown = destination.hostLookupFailure {
                    throw .stream(what: "connecting", reason: unknown)
                }
                throw failure("connecting", code: opened)
            }
        }
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        switch destination.format {
        // No seeking back at the end to fill in duration and size: a stream has neither.
        case .flv: av_dict_set(&options, "flvflags", "no_duration_filesize", 0)
        // TCP: RTP over UDP loses packets to any burst, and does not pass NAT.
        case .rtsp: av_dict_set(&options, "rtsp_transport", "tcp", 0)
        case .mpegts: break
        }
        let written = avformat_write_header(format, &options)
        guard written >= 0 else { throw failure("starting the stream", code: written) }
        headerWritten = true
    }

    /// The error for a failed call: a timeout or the cut-off by name, else FFmpeg's reason.
    private func failure(_ what: String, code: Int32) -> WriterError {
        if code == cffmpeg_AVERROR_EXIT, let reason = deadline.reason { return .stream(what: what, reason: reason) }
        return .stream(what: what, reason: FFmpegError(call: "", code: code).reason)
    }

    /// Sends one compressed video frame, `time` nanoseconds into the stream.
    func writeVideo(_ bytes: UnsafeRawBufferPointer, time: Int64, duration: Int64?, isKeyframe: Bool, timeout: Int64) throws(WriterError) {
        guard let videoStream else { return }
        try send(bytes, stream: videoStream, pts: time, duration: duration ?? 0, timeBase: Self.nanoseconds, isKeyframe: isKeyframe, timeout: timeout)
    }

    /// Sends one audio packet from the stream's encoder (its times in the encoder's time base).
    func writeAudio(_ encoded: UnsafeMutablePointer<AVPacket>, timeout: Int64) throws(WriterError) {
        guard let audioStream, let data = encoded.pointee.data else { return }
        try send(UnsafeRawBufferPointer(start: data, count: Int(encoded.pointee.size)), stream: audioStream, pts: encoded.pointee.pts,
                 duration: encoded.pointee.duration, timeBase: audioTimeBase, isKeyframe: true, timeout: timeout)
    }

    private func send(_ bytes: UnsafeRawBufferPointer, stream: Int32, pts: Int64, duration: Int64, timeBase: AVRational,
                      isKeyframe: Bool, timeout: Int64) throws(WriterError) {
        guard headerWritten, !closed, let base = bytes.baseAddress, bytes.count > 0 else { return }
        let made = av_new_packet(packet, Int32(bytes.count))
        guard made >= 0 else { throw .ffmpeg(FFmpegError(call: "av_new_packet", code: made)) }
        packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        let target = format.pointee.streams[Int(stream)]!.pointee.time_base
        packet.pointee.pts = av_rescale_q(pts, timeBase, target)
        packet.pointee.dts = packet.pointee.pts
        packet.pointee.duration = av_rescale_q(duration, timeBase, target)
        packet.pointee.stream_index = stream
        packet.pointee.flags = isKeyframe ? AV_PKT_FLAG_KEY : 0
        deadline.set(after: timeout)
        defer { deadline.clear() }
        let written = av_interleaved_write_frame(format, packet)
        av_packet_unref(packet)
        guard written >= 0 else { throw failure("sending", code: written) }
        payloadBytes += Int64(bytes.count)
    }

    /// Bytes the container has written to the network so far (media and
    /// framing), or the media bytes where the protocol does its own framing (RTSP).
    var bytesWritten: Int64 {
        if closed { return finalBytes }
        guard let io = format.pointee.pb else { return payloadBytes }
        return max(0, avio_tell(io))
    }

    /// Ends the stream: `gracefully` sends what the muxer holds and the
    /// container's end (within `timeout`), then closes the connection.
    func close(gracefully: Bool, timeout: Int64 = 2_000_000_000) {
        guard !closed else { return }
        // The trailer also frees what the muxer holds (RTSP's connections),
        // so it is written on every close; after a loss it gives up at once.
        deadline.set(after: gracefully ? timeout : 0)
        if headerWritten { _ = av_write_trailer(format) }
        if gracefully, let io = format.pointee.pb { avio_flush(io) }
        finalBytes = bytesWritten
        closed = true
        if format.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 { avio_closep(&format.pointee.pb) }
        avformat_free_context(format)
        deadline.clear()
    }
}

/// When a blocking network call must give up: its deadline, or the stream's
/// cut-off once it is stopping (set from another thread). libavformat polls
/// `hasPassed` through the interrupt callback, from the thread that made the call.
final class StreamDeadline: Sendable {
    private struct State {
        var deadline: Int64?
        var timeout: Int64 = 0
        /// No call may go on past this (the stream is stopping).
        var cutoff: Int64?
    }

    private let state = Locked(State())

    func set(after nanoseconds: Int64) {
        state.withLock {
            $0.deadline = MonotonicClock.nowNanoseconds() + nanoseconds
            $0.timeout = nanoseconds
        }
    }

    func clear() { state.withLock { $0.deadline = nil } }

    /// From any thread: every call, the one under way too, gives up at `time` at the latest.
    func cut(at time: Int64) { state.withLock { $0.cutoff = min($0.cutoff ?? time, time) } }

    var hasPassed: Bool {
        state.withLock { state in
            let now = MonotonicClock.nowNanoseconds()
            return state.deadline.map { now >= $0 } ?? false || state.cutoff.map { now >= $0 } ?? false
        }
    }

    /// Why a call gave up, when it did so here.
    var reason: String? {
        state.withLock { state in
            let now = MonotonicClock.nowNanoseconds()
            if let cutoff = state.cutoff, now >= cutoff { return "stopped" }
            guard let deadline = state.deadline, now >= deadline else { return nil }
            return "no answer for \(Double(state.timeout) / 1e9) s"
        }
    }
}
