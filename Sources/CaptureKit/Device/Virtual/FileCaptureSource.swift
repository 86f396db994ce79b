import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// A camera that replays the first video track of a file: anything
/// libavformat reads (Y4M, raw `.mjpeg`, MP4, Matroska …).
///
/// MJPEG, H.264 and HEVC frames are delivered as they are stored, compressed
/// (so they can be written without re-encoding, as a camera's are); raw
/// frames from Y4M files are read straight into a few recycled buffers, and
/// those of raw video files delivered in the demuxer's own memory, uncopied;
/// any other codec is decoded and delivered raw in the decoder's pixel format.
///
/// The first frame is stamped with the time `run` began on CLOCK_MONOTONIC,
/// each later one that time plus its distance from the first in the file;
/// a track without timestamps runs at its frame rate (25 fps when it has
/// none). In real time a frame is delivered no earlier than its stamp;
/// otherwise as fast as the file is read. The end of the file ends the
/// capture with `.endOfInput`; to replay it again, close and open the
/// source, which starts from the beginning.
final class FileCaptureSource: CaptureSource, Sendable {
    let mediaType = MediaType.video
    /// The file, as given.
    let path: String
    let localizedName: String
    /// The container's name, once open (`YUV4MPEG pipe`, `QuickTime / MOV` …).
    var modelID: String? { state.withLock { $0.modelID } }
    var videoFormat: CaptureVideoFormat? { state.withLock { $0.videoFormat } }
    let audioFormat: CaptureAudioFormat? = nil
    let request: CaptureVideoRequest
    let realtime: Bool
    /// A file loses no frames.
    let droppedByDevice = 0

    /// The frame rate of a track that states none.
    static let defaultFramesPerSecond = 25.0

    /// How a file's frames are read and handed on.
    private enum Delivery {
        /// Packets read with libavformat's demuxer.
        case demuxed(DemuxedDelivery)
        /// Y4M frames read into recycled buffers.
        case y4mFrames(PixelFormat, reader: Y4MFrameReader)
        /// The images of a raw MJPEG stream, delimited without libavformat's parser.
        case jpegStream(codecName: String, reader: JPEGStreamReader)
    }

    /// What becomes of a demuxed packet.
    private enum DemuxedDelivery {
        /// Packets as they are, compressed.
        case compressed(codecName: String)
        /// Packets that are packed raw images of `frameSize` bytes.
        case rawPackets(PixelFormat, frameSize: Int)
        /// Frames out of a decoder.
        case decoded(Decoder)
    }

    /// What `open()` settled. The capture loop reads it once as it starts;
    /// the file, its readers and decoder are then used on the capture thread
    /// alone, and close() lets go of them after the loop ended.
    private struct State {
        var modelID: String?
        var videoFormat: CaptureVideoFormat?
        var file: MediaFile?
        var delivery: Delivery?
        var streamIndex: Int32 = -1
        var timeBase = AVRational(num: 1, den: 1)
        var frameDuration: (numerator: Int64, denominator: Int64) = (1, 25)
        var isIntraOnly = false
        /// The buffers Y4M frames are read into.
        var frameBuffers: RecyclingBufferPool?
    }

    private let state = Locked(State())
    /// Samples lent from packets and decoded frames, which pace a file played as fast as possible.
    private let lent = LentSamples()
    private let packets: PacketLender
    private let frames: FrameLender

    /// A source replaying `path`. A request may only ask for what the file
    /// has: its frame size, its pixel format or codec (a libavutil name, a
    /// fourcc such as YUYV or MJPG, or a codec name), its frame rate.
    init(path: String, request: CaptureVideoRequest = CaptureVideoRequest(), realtime: Bool = true) {
        self.path = path
        self.request = request
        self.realtime = realtime
        localizedName = VirtualDevice.file(path: path).localizedName
        packets = PacketLender(counting: lent)
        frames = FrameLender(counting: lent)
    }

    // MARK: Opening

    func open() throws(CaptureError) {
        let file: MediaFile
        do { file = try MediaFile(path: path) } catch { throw Self.captureError(error, path: path) }
        let streams = file.streams
        guard let index = streams.firstIndex(where: {
            $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO && $0.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0
        }) else { throw .source(path, reason: "the file has no video track") }
        for (other, stream) in streams.enumerated() where other != index { stream.pointee.discard = AVDISCARD_ALL }
        let stream = streams[index]
        let parameters = stream.pointee.codecpar.pointee
        let width = Int(parameters.width), height = Int(parameters.height)
        guard width > 0, height > 0 else { throw .source(path, reason: "the video track states no frame size") }
        let codecName = String(cString: avcodec_get_name(parameters.codec_id))
        let demuxer = String(cString: file.context.pointee.iformat.pointee.name)

        let delivery: Delivery
        let layout: VideoSampleLayout
        let fourcc: String
        switch parameters.codec_id {
        case AV_CODEC_ID_MJPEG where ["mjpeg", "jpeg_pipe"].contains(demuxer) && Self.rewind(file.context):
            delivery = .jpegStream(codecName: codecName, reader: JPEGStreamReader(io: file.context.pointee.pb))
            layout = .compressed(codecName: codecName)
            fourcc = VirtualPixelFormat.fourcc(forCodec: codecName)
        case AV_CODEC_ID_MJPEG, AV_CODEC_ID_H264, AV_CODEC_ID_HEVC:
            delivery = .demuxed(.compressed(codecName: codecName))
            layout = .compressed(codecName: codecName)
            fourcc = VirtualPixelFormat.fourcc(forCodec: codecName)
        default:
            let stated = PixelFormat(raw: AVPixelFormat(parameters.format))
            if parameters.codec_id == AV_CODEC_ID_RAWVIDEO, ["yuv4mpegpipe", "rawvideo"].contains(demuxer),
               parameters.format >= 0, let size = stated.imageSize(width: width, height: height) {
                if demuxer == "yuv4mpegpipe", let reader = Y4MFrameReader(context: file.context, streamIndex: Int32(index), frameSize: size) {
                    delivery = .y4mFrames(stated, reader: reader)
                } else {
                    delivery = .demuxed(.rawPackets(stated, frameSize: size))
                }
                layout = .raw(stated, bytesPerRow: nil)
                fourcc = VirtualPixelFormat.fourcc(for: stated)
            } else {
                let decoder: Decoder
                do { decoder = try Decoder(stream: stream, path: path) } catch { throw Self.captureError(error, path: path) }
                let format = parameters.format >= 0 ? stated : PixelFormat(raw: decoder.context.pointee.pix_fmt)
                guard format.raw != AV_PIX_FMT_NONE else { throw .source(path, reason: "the \(codecName) track states no pixel format") }
                delivery = .demuxed(.decoded(decoder))
                layout = .raw(format, bytesPerRow: nil)
                fourcc = VirtualPixelFormat.fourcc(for: format)
            }
        }

        let rate = [stream.pointee.r_frame_rate, stream.pointee.avg_frame_rate].first { $0.num > 0 && $0.den > 0 }
        let duration = rate.map { (numerator: Int64($0.den), denominator: Int64($0.num)) }
            ?? SampleClock.frameDuration(framesPerSecond: Self.defaultFramesPerSecond)
        try check(width: width, height: height, codecName: codecName, layout: layout, fourcc: fourcc,
                  framesPerSecond: Double(duration.denominator) / Double(duration.numerator))

        let descriptor = avcodec_descriptor_get(parameters.codec_id)
        var opened = State(file: file, delivery: delivery)
        opened.isIntraOnly = descriptor.map { $0.pointee.props & Int32(AV_CODEC_PROP_INTRA_ONLY) != 0 } ?? false
        if case .y4mFrames(_, let reader) = delivery {
            opened.frameBuffers = RecyclingBufferPool(bufferSize: reader.frameSize, maximumCount: realtime ? Self.realtimePoolLimit : Self.lentLimit)
        }
        opened.streamIndex = Int32(index)
        opened.timeBase = stream.pointee.time_base
        opened.frameDuration = duration
        opened.modelID = file.context.pointee.iformat.pointee.long_name.map { String(cString: $0) } ?? demuxer
        // Compressed frames copied as they are need the file's codec configuration with them.
        var configuration = [UInt8]()
        if case .demuxed(.compressed) = delivery, parameters.extradata_size > 0, let extradata = parameters.extradata {
            configuration = Array(UnsafeBufferPointer(start: extradata, count: Int(parameters.extradata_size)))
        }
        opened.videoFormat = CaptureVideoFormat(
            layout: layout, width: width, height: height,
            frameDuration: MediaTime(value: duration.numerator, timescale: Int32(clamping: duration.denominator)), fourcc: fourcc,
            codecConfiguration: configuration)
        state.withLock { $0 = opened }
    }

    /// Moves a raw stream's reading back to its first byte (opening the file
    /// read ahead to learn its streams); false when it cannot be.
    private static func rewind(_ context: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard let io = context.pointee.pb else { return false }
        return avio_seek(io, 0, SEEK_SET) == 0
    }

    /// Whether samples are compressed frames (small: more of them may be out at once).
    private static func deliversCompressedFrames(_ delivery: Delivery?) -> Bool {
        switch delivery {
        case .demuxed(.compressed), .jpegStream: return true
        default: return false
        }
    }

    /// Refuses a request for anything the file does not have.
    private func check(width: Int, height: Int, codecName: String, layout: VideoSampleLayout, fourcc: String,
                       framesPerSecond: Double) throws(CaptureError) {
        if let askedWidth = request.width ?? request.preset?.requiredSize?.width,
           let askedHeight = request.height ?? request.preset?.requiredSize?.height,
           askedWidth != width || askedHeight != height {
            throw .unsupported(path, reason: "the file's frames are \(width)x\(height), not \(askedWidth)x\(askedHeight); a file is replayed at its own size")
        }
        if let asked = request.pixelFormat {
            let matches: Bool
            switch layout {
            case .compressed: matches = [codecName, fourcc].contains { $0.lowercased() == asked.lowercased() }
            case .raw(let format, _): matches = VirtualPixelFormat.pixelFormat(named: asked) == format
            }
            if !matches { throw .unsupported(path, reason: "the file's frames are \(fourcc == codecName.uppercased() ? codecName : "\(fourcc) (\(codecName))"), not \(asked)") }
        }
        if let asked = request.framesPerSecond, abs(asked - framesPerSecond) > 0.01 {
            throw .unsupported(path, reason: "the file runs at \(framesPerSecond) frames per second, not \(asked)")
        }
    }

    /// A capture error for a file that could not be opened, naming the file.
    static func captureError(_ error: PlaybackError, path: String) -> CaptureError {
        switch error {
        case .noSuchFile: return .device(.noSuchDevice(path, reason: "no such file to replay"))
        case .permissionDenied: return .device(.permissionDenied(path, reason: "this user may not read the file"))
        case .notAFile: return .device(.notACaptureDevice(path, reason: "not a regular file, so it cannot be replayed"))
        default:
            let text = error.description
            let prefix = path + ": "
            return .source(path, reason: text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text)
        }
    }

    func close() {
        state.withLock { state in
            state.delivery = nil
            state.file = nil
            state.frameBuffers = nil
        }
    }

    // MARK: Capture

    func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let opened = state.current
        guard let file = opened.file, let delivery = opened.delivery, let format = opened.videoFormat else {
            return .failed(.source(path, reason: "the source is not open"))
        }
        guard let packet = av_packet_alloc() else { return .failed(.source(path, reason: "out of memory")) }
        defer {
            var pointer: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&pointer)
        }
        var timing = FileFrameTiming(start: MonotonicClock.nowNanoseconds(), timeBase: opened.timeBase, frameDuration: opened.frameDuration)
        switch delivery {
        case .y4mFrames(let pixelFormat, let reader):
            guard let pool = opened.frameBuffers else { return .failed(.source(path, reason: "the source is not open")) }
            return runY4M(reader: reader, pixelFormat: pixelFormat, pool: pool, opened: opened, format: format, timing: &timing, stop: stop,
                          deliver: deliver)
        case .jpegStream(let codecName, let reader):
            return runJPEG(reader: reader, codecName: codecName, packet: packet, opened: opened, format: format, timing: &timing, stop: stop,
                           deliver: deliver)
        case .demuxed(let demuxed):
            return runDemuxed(demuxed, file: file, packet: packet, opened: opened, format: format, timing: &timing, stop: stop, deliver: deliver)
        }
    }

    /// Plays a file through libavformat's demuxer, packet by packet.
    private func runDemuxed(_ delivery: DemuxedDelivery, file: MediaFile, packet: UnsafeMutablePointer<AVPacket>, opened: State,
                            format: CaptureVideoFormat, timing: inout FileFrameTiming, stop: CaptureStopSignal,
                            deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let compressed = Self.deliversCompressedFrames(opened.delivery)
        // Packed copies of decoded multi-plane frames.
        var copies: RecyclingBufferPool?
        var frame: UnsafeMutablePointer<AVFrame>?
        defer { av_frame_free(&frame) }
        if case .decoded(let decoder) = delivery {
            avcodec_flush_buffers(decoder.context)
            frame = av_frame_alloc()
            guard frame != nil else { return .failed(.source(path, reason: "out of memory")) }
        }

        while true {
            if stop.isRaised { return .stopped }
            let status = av_read_frame(file.context, packet)
            let ended = status == cffmpeg_AVERROR_EOF
            if status < 0, !ended {
                return .failed(.source(path, reason: "reading failed: \(FFmpegError(call: "av_read_frame", code: status).reason)"))
            }
            if !ended, packet.pointee.stream_index != opened.streamIndex || packet.pointee.size <= 0 {
                av_packet_unref(packet)
                continue
            }
            switch delivery {
            case .compressed(let codecName):
                if ended { return .endOfInput }
                let stamp = timing.stamp(pts: packet.pointee.pts, dts: packet.pointee.dts)
                let isKeyframe = packet.pointee.flags & AV_PKT_FLAG_KEY != 0 || opened.isIntraOnly
                if let end = pace(stamp, compressed: compressed, stop: stop, packet: packet) { return end }
                guard let storage = packets.lend(moving: packet) else { return .failed(.source(path, reason: "out of memory")) }
                deliver(.video(VideoSampleBuffer(
                    storage: storage, layout: .compressed(codecName: codecName), width: format.width, height: format.height,
                    presentationTime: stamp.time, duration: format.frameDuration, sequence: timing.sequence, isKeyframe: isKeyframe,
                    decodeTime: stamp.decodeTime)))
            case .rawPackets(let pixelFormat, let frameSize):
                if ended { return .endOfInput }
                guard Int(packet.pointee.size) >= frameSize else {
                    av_packet_unref(packet)
                    return .failed(.source(path, reason: "a frame is cut short: \(packet.pointee.size) of its \(frameSize) bytes"))
                }
                let stamp = timing.stamp(pts: packet.pointee.pts, dts: packet.pointee.dts)
                if let end = pace(stamp, compressed: compressed, stop: stop, packet: packet) { return end }
                guard let storage = packets.lend(moving: packet, count: frameSize) else { return .failed(.source(path, reason: "out of memory")) }
                deliver(.video(VideoSampleBuffer(
                    storage: storage, layout: .raw(pixelFormat, bytesPerRow: nil), width: format.width, height: format.height,
                    presentationTime: stamp.time, duration: format.frameDuration, sequence: timing.sequence)))
            case .decoded(let decoder):
                let sent = avcodec_send_packet(decoder.context, ended ? nil : packet)
                av_packet_unref(packet)
                if sent < 0, sent != cffmpeg_AVERROR_EOF {
                    return .failed(.source(path, reason: "decoding failed: \(FFmpegError(call: "avcodec_send_packet", code: sent).reason)"))
                }
                while true {
                    let received = avcodec_receive_frame(decoder.context, frame)
                    if received == cffmpeg_AVERROR_EAGAIN { break }
                    if received == cffmpeg_AVERROR_EOF { return .endOfInput }
                    if received < 0 {
                        return .failed(.source(path, reason: "decoding failed: \(FFmpegError(call: "avcodec_receive_frame", code: received).reason)"))
                    }
                    if let end = deliverDecoded(frame!, format: format, copies: &copies, timing: &timing, stop: stop, deliver: deliver) {
                        return end
                    }
                }
                if ended { return .endOfInput }
            }
        }
    }

    /// At most this many samples of a file played as fast as possible are
    /// held by consumers at once; decoding waits for them (as the test
    /// pattern waits for its buffers) instead of filling their queues. Two
    /// let reading the next frame overlap with encoding the last.
    static let lentLimit = 2
    /// The same for compressed frames, which are small: letting more of them
    /// out lets the reading and writing threads wake each other once for
    /// every half of these rather than once for every frame.
    static let compressedLentLimit = 16
    /// At most this many Y4M frames played in real time are held by
    /// consumers at once (as many as the test pattern lends).
    static let realtimePoolLimit = 16

    /// Compressed frames played as fast as possible gather in an output's
    /// queue, half of those that may be out, before its thread is woken;
    /// anything else wakes it for each frame (raw frames: too few may be
    /// out; in real time: frames are due one by one).
    var samplesPerWakeup: Int {
        guard !realtime, state.withLock({ Self.deliversCompressedFrames($0.delivery) }) else { return 1 }
        return Self.compressedLentLimit / 2
    }

    /// Plays a Y4M file: each frame read into a free buffer of `pool`, which
    /// paces a file played as fast as possible to its consumers.
    private func runY4M(reader: Y4MFrameReader, pixelFormat: PixelFormat, pool: RecyclingBufferPool, opened: State, format: CaptureVideoFormat,
                        timing: inout FileFrameTiming, stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let frameDuration = opened.frameDuration, timeBase = opened.timeBase
        let perFrame = AVRational(num: Int32(clamping: frameDuration.numerator), den: Int32(clamping: frameDuration.denominator))
        var index: Int64 = 0
        while true {
            if stop.isRaised { return .stopped }
            guard let buffer = pool.take() ?? pool.waitForBuffer(stop: stop) else { return .stopped }
            switch reader.read(into: buffer.baseAddress!) {
            case .frame:
                break
            case .end:
                pool.recycle(buffer)
                return .endOfInput
            case .failed(let reason):
                pool.recycle(buffer)
                return .failed(.source(path, reason: "reading failed: \(reason)"))
            }
            let stamp = timing.stamp(pts: av_rescale_q(index, perFrame, timeBase), dts: cffmpeg_AV_NOPTS_VALUE)
            index += 1
            if realtime, stop.wait(untilNanoseconds: stamp.due) {
                pool.recycle(buffer)
                return .stopped
            }
            deliver(.video(VideoSampleBuffer(
                storage: pool.lend(buffer, count: reader.frameSize), layout: .raw(pixelFormat, bytesPerRow: nil),
                width: format.width, height: format.height,
                presentationTime: stamp.time, duration: format.frameDuration, sequence: timing.sequence)))
        }
    }

    /// Plays a raw MJPEG stream, image by image, each one a keyframe.
    private func runJPEG(reader: JPEGStreamReader, codecName: String, packet: UnsafeMutablePointer<AVPacket>, opened: State,
                         format: CaptureVideoFormat, timing: inout FileFrameTiming, stop: CaptureStopSignal,
                         deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let frameDuration = opened.frameDuration, timeBase = opened.timeBase
        let perFrame = AVRational(num: Int32(clamping: frameDuration.numerator), den: Int32(clamping: frameDuration.denominator))
        var index: Int64 = 0
        while true {
            if stop.isRaised { return .stopped }
            switch reader.read(into: packet) {
            case .image:
                break
            case .end:
                return .endOfInput
            case .failed(let reason):
                return .failed(.source(path, reason: "reading failed: \(reason)"))
            }
            let stamp = timing.stamp(pts: av_rescale_q(index, perFrame, timeBase), dts: cffmpeg_AV_NOPTS_VALUE)
            index += 1
            if let end = pace(stamp, compressed: true, stop: stop, packet: packet) { return end }
            guard let storage = packets.lend(moving: packet) else { return .failed(.source(path, reason: "out of memory")) }
            deliver(.video(VideoSampleBuffer(
                storage: storage, layout: .compressed(codecName: codecName), width: format.width, height: format.height,
                presentationTime: stamp.time, duration: format.frameDuration, sequence: timing.sequence, isKeyframe: true)))
        }
    }

    /// In real time, waits for a sample's stamp; otherwise until consumers
    /// hold fewer than `lentLimit` samples. Returns how capture ends if
    /// stopping was asked meanwhile (dropping the packet).
    private func pace(_ stamp: FileFrameTiming.Stamp, compressed: Bool, stop: CaptureStopSignal,
                      packet: UnsafeMutablePointer<AVPacket>?) -> CaptureEnd? {
        if realtime {
            guard stop.wait(untilNanoseconds: stamp.due) else { return nil }
        } else {
            let limit = compressed ? Self.compressedLentLimit : Self.lentLimit
            guard !lent.waitUntilFewer(than: limit, resumingAt: limit / 2, stop: stop) else { return nil }
        }
        if let packet { av_packet_unref(packet) }
        return .stopped
    }

    /// Delivers a decoded frame: single-plane images in the decoder's memory,
    /// others packed into a pooled buffer.
    private func deliverDecoded(_ frame: UnsafeMutablePointer<AVFrame>, format: CaptureVideoFormat, copies: inout RecyclingBufferPool?,
                                timing: inout FileFrameTiming, stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd? {
        defer { av_frame_unref(frame) }
        let stamp = timing.stamp(pts: frame.pointee.best_effort_timestamp, dts: cffmpeg_AV_NOPTS_VALUE)
        let pixelFormat = PixelFormat(raw: AVPixelFormat(frame.pointee.format))
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        guard let packedSize = pixelFormat.imageSize(width: width, height: height) else {
            return .failed(.source(path, reason: "a decoded \(width)x\(height) \(pixelFormat) frame is not possible"))
        }
        if let end = pace(stamp, compressed: false, stop: stop, packet: nil) { return end }
        let storage: SampleStorage
        var bytesPerRow: Int?
        let stride = Int(frame.pointee.linesize.0)
        if av_pix_fmt_count_planes(pixelFormat.raw) == 1, stride > 0, frame.pointee.buf.0 != nil {
            guard let lent = frames.lend(moving: frame, count: stride * height) else { return .failed(.source(path, reason: "out of memory")) }
            storage = lent
            if stride * height != packedSize { bytesPerRow = stride }
        } else {
            if copies == nil || copies!.bufferSize != packedSize {
                copies = RecyclingBufferPool(bufferSize: packedSize, maximumCount: 16)
            }
            let pool = copies!
            guard let buffer = pool.take() ?? pool.waitForBuffer(stop: stop) else { return .stopped }
            let copied = withUnsafePointer(to: &frame.pointee.data) { data in
                withUnsafePointer(to: &frame.pointee.linesize) { lines in
                    data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            av_image_copy_to_buffer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(packedSize),
                                                    planes, strides, pixelFormat.raw, Int32(width), Int32(height), 1)
                        }
                    }
                }
            }
            guard copied >= 0 else {
                pool.recycle(buffer)
                return .failed(.source(path, reason: "a decoded frame could not be copied: \(FFmpegError(call: "av_image_copy_to_buffer", code: copied).reason)"))
            }
            storage = pool.lend(buffer, count: packedSize)
        }
        deliver(.video(VideoSampleBuffer(
            storage: storage, layout: .raw(pixelFormat, bytesPerRow: bytesPerRow), width: width, height: height,
            presentationTime: stamp.time, duration: format.frameDuration, sequence: timing.sequence)))
        return nil
    }
}
