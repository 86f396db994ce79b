import Synchronization
import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Pulls decoded frames out of a player item for given item times, like
/// AVPlayerItemVideoOutput: the frame for an item time is the one on
/// screen then, the last whose presentation time is at or before it.
/// Frames come converted to the output's pixel format and size.
///
/// Asking for later and later times decodes forward from where the last
/// request left off; the output seeks only to go back, or to jump ahead past
/// a keyframe it has not reached. Each output reads the file on its own, so
/// several outputs on one item do not disturb each other. An output is
/// meant to be used from one thread at a time.
public final class PlayerItemVideoOutput {
    public let item: PlayerItem
    public let pixelFormat: PixelFormat
    /// The size frames are scaled to; nil keeps each frame's own size.
    public let size: (width: Int, height: Int)?

    private var file: MediaFile
    private var streamIndex: Int32
    private var stream: UnsafeMutablePointer<AVStream>
    private var decoder: Decoder
    /// After reopening a grown file: frames up to this time were shown already.
    private var skipThrough: Int64?
    private let packet: UnsafeMutablePointer<AVPacket>
    /// The frame on screen at the last requested time, and the one after it.
    private var current: UnsafeMutablePointer<AVFrame>?
    private var upcoming: UnsafeMutablePointer<AVFrame>?
    private var readEnded = false
    private var decodeEnded = false
    private var lastPacketTime: Int64 = .min
    private var fileSizeAtEnd: Int64 = -1
    /// The presentation time of the frame last handed out.
    private var acquiredTime: Int64?
    private var converter: PixelConverter?
    /// How many times the output has sought (for tests of forward decoding).
    private(set) var seekCount = 0
    private let notifier = MediaDataNotifier()

    /// An output for the item's default video track.
    public init(item: PlayerItem, pixelFormat: PixelFormat = .rgb24, size: (width: Int, height: Int)? = nil) throws(PlaybackError) {
        guard pixelFormat.isConvertible(asInput: false) else {
            throw .notMedia(path: item.path, reason: "frames cannot be converted to \(pixelFormat)")
        }
        if let size, !(1...32768).contains(size.width) || !(1...32768).contains(size.height) {
            throw .notMedia(path: item.path, reason: "a \(size.width)x\(size.height) frame is not possible")
        }
        self.item = item
        self.pixelFormat = pixelFormat
        self.size = size
        (file, streamIndex, stream, decoder) = try PlayerItemVideoOutput.open(item.path)
        guard let packet = av_packet_alloc() else {
            throw .ffmpeg(path: item.path, error: FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM)))
        }
        self.packet = packet
    }

    /// Opens the file for reading its default video track alone.
    private static func open(_ path: String) throws(PlaybackError) -> (MediaFile, Int32, UnsafeMutablePointer<AVStream>, Decoder) {
        let file = try MediaFile(path: path)
        guard let index = file.bestStream(AVMEDIA_TYPE_VIDEO) else { throw .noTrack(path: path, mediaType: .video) }
        let stream = file.context.pointee.streams[index]!
        for (other, candidate) in file.streams.enumerated() where other != index { candidate.pointee.discard = AVDISCARD_ALL }
        return (file, Int32(index), stream, try Decoder(stream: stream, path: path))
    }

    deinit {
        notifier.cancel()
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packetPointer)
        av_frame_free(&current)
        av_frame_free(&upcoming)
    }

    // MARK: Pulling frames

    /// Whether the frame for `itemTime` differs from the one last handed out
    /// by `copyPixelBuffer(forItemTime:)` (true also when none was).
    public func hasNewPixelBuffer(forItemTime itemTime: MediaTime) throws(PlaybackError) -> Bool {
        guard let frame = try frame(at: itemTime) else { return false }
        return frame.pointee.best_effort_timestamp != acquiredTime
    }

    /// The frame on screen at `itemTime`, converted; nil before the first
    /// frame. After the last frame, the last frame stays on screen.
    public func copyPixelBuffer(forItemTime itemTime: MediaTime) throws(PlaybackError) -> PixelBuffer? {
        var shown = MediaTime.invalid
        return try copyPixelBuffer(forItemTime: itemTime, itemTimeForDisplay: &shown)
    }

    /// As `copyPixelBuffer(forItemTime:)`, also setting `itemTimeForDisplay`
    /// to the item time at which the returned frame starts (left as it was
    /// when there is no frame).
    public func copyPixelBuffer(forItemTime itemTime: MediaTime, itemTimeForDisplay: inout MediaTime) throws(PlaybackError) -> PixelBuffer? {
        guard let frame = try frame(at: itemTime) else { return nil }
        acquiredTime = frame.pointee.best_effort_timestamp
        itemTimeForDisplay = self.itemTime(ofStreamTime: frame.pointee.best_effort_timestamp)
        let width = size?.width ?? Int(frame.pointee.width)
        let height = size?.height ?? Int(frame.pointee.height)
        if converter == nil || converter!.width != width || converter!.height != height {
            do { converter = try PixelConverter(pixelFormat: pixelFormat, width: width, height: height) } catch {
                throw .notMedia(path: item.path, reason: error.description)
            }
        }
        do { return try converter!.convert(frame: frame) } catch {
            throw .corrupt(path: item.path, reason: error.description)
        }
    }

    /// The item time of the next frame already decoded after the last
    /// requested time (such as the first frame, after a request for a time
    /// before it), if there is one.
    public var nextFrameTime: MediaTime? {
        upcoming.map { itemTime(ofStreamTime: $0.pointee.best_effort_timestamp) }
    }

    /// The item time at which the frame last handed out starts, if any.
    public var acquiredItemTime: MediaTime? { acquiredTime.map(itemTime(ofStreamTime:)) }

    private func itemTime(ofStreamTime ticks: Int64) -> MediaTime {
        let base = stream.pointee.time_base
        let fileTime = MediaTime(value: ticks, timescale: base.den) * Int64(base.num)
        return fileTime - file.timelineOrigin
    }

    private func streamTicks(ofItemTime time: MediaTime) -> Int64? {
        guard time.isNumeric else { return nil }
        let fileTime = time + file.timelineOrigin
        let base = stream.pointee.time_base
        guard fileTime.isNumeric, base.num > 0 else { return nil }
        // ticks = fileTime / (num/den), rounded down to stay at or before the time.
        let numerator = Int128(fileTime.value) * Int128(base.den)
        let denominator = Int128(fileTime.timescale) * Int128(base.num)
        var quotient = numerator / denominator
        if numerator % denominator != 0 && numerator < 0 { quotient -= 1 }
        return Int64(exactly: quotient)
    }

    /// Advances to the frame on screen at `itemTime` and returns it (owned by the output).
    private func frame(at itemTime: MediaTime) throws(PlaybackError) -> UnsafeMutablePointer<AVFrame>? {
        guard let target = streamTicks(ofItemTime: itemTime) else {
            throw .timeOutOfRange(path: item.path, time: itemTime, duration: item.duration)
        }
        if let current, current.pointee.best_effort_timestamp > target {
            try seek(to: target)
        } else if current == nil, upcoming.map({ $0.pointee.best_effort_timestamp > target }) == true, lastPacketTime != .min {
            // Before the first frame decoded so far: that is only "nothing
            // yet" if decoding started at the beginning.
            if seekCount > 0 { try seek(to: target) }
        } else if shouldSeekForward(to: target) {
            try seek(to: target)
        }
        if decodeEnded, upcoming == nil, grewSinceEnd() {
            try resumeAfterEnd()
        }
        while true {
            if upcoming == nil {
                upcoming = try decodeNextFrame()
                if upcoming == nil { break }
            }
            guard let next = upcoming, next.pointee.best_effort_timestamp <= target else { break }
            av_frame_free(&current)
            current = next
            upcoming = nil
        }
        return current
    }

    /// Whether the keyframe at or before `target` lies beyond what has been read.
    private func shouldSeekForward(to target: Int64) -> Bool {
        guard let entry = avformat_index_get_entry_from_timestamp(stream, target, AVSEEK_FLAG_BACKWARD) else { return false }
        let keyframe = entry.pointee.timestamp
        return keyframe > lastPacketTime && keyframe > (current?.pointee.best_effort_timestamp ?? .min) && lastPacketTime != .min
    }

    private func seek(to target: Int64) throws(PlaybackError) {
        let status = av_seek_frame(file.context, streamIndex, target, AVSEEK_FLAG_BACKWARD)
        if status < 0 {
            // Some files cannot seek by time; start again from the beginning.
            let again = avformat_seek_file(file.context, streamIndex, .min, .min, .min, AVSEEK_FLAG_BACKWARD)
            if again < 0 { throw .corrupt(path: item.path, reason: FFmpegError(call: "av_seek_frame", code: status).reason) }
        }
        avcodec_flush_buffers(decoder.context)
        av_frame_free(&current)
        av_frame_free(&upcoming)
        skipThrough = nil
        readEnded = false
        decodeEnded = false
        lastPacketTime = .min
        seekCount += 1
    }

    /// The next frame out of the decoder, reading packets as needed; nil at the end.
    private func decodeNextFrame() throws(PlaybackError) -> UnsafeMutablePointer<AVFrame>? {
        guard let frame = av_frame_alloc() else {
            throw .ffmpeg(path: item.path, error: FFmpegError(call: "av_frame_alloc", code: cffmpeg_averror(ENOMEM)))
        }
        while !decodeEnded {
            let received = avcodec_receive_frame(decoder.context, frame)
            if received >= 0 {
                if frame.pointee.best_effort_timestamp == cffmpeg_AV_NOPTS_VALUE { frame.pointee.best_effort_timestamp = frame.pointee.pts }
                if let skip = skipThrough {
                    if frame.pointee.best_effort_timestamp <= skip {
                        av_frame_unref(frame)
                        continue
                    }
                    skipThrough = nil
                }
                return frame
            }
            if received == cffmpeg_AVERROR_EOF { decodeEnded = true; break }
            guard received == cffmpeg_AVERROR_EAGAIN else {
                var leftover: UnsafeMutablePointer<AVFrame>? = frame
                av_frame_free(&leftover)
                throw .corrupt(path: item.path, reason: FFmpegError(call: "avcodec_receive_frame", code: received).reason)
            }
            if readEnded {
                _ = avcodec_send_packet(decoder.context, nil)
                continue
            }
            let read = av_read_frame(file.context, packet)
            if read < 0 {
                // The end, or a truncated file: decode what was read.
                readEnded = true
                fileSizeAtEnd = currentFileSize()
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            if packet.pointee.dts != cffmpeg_AV_NOPTS_VALUE { lastPacketTime = max(lastPacketTime, packet.pointee.dts) }
            let sent = avcodec_send_packet(decoder.context, packet)
            // A damaged packet is skipped; the decoder resynchronizes at the next keyframe.
            if sent < 0 && sent != cffmpeg_AVERROR_INVALIDDATA && sent != cffmpeg_AVERROR_EAGAIN {
                var leftover: UnsafeMutablePointer<AVFrame>? = frame
                av_frame_free(&leftover)
                throw .corrupt(path: item.path, reason: FFmpegError(call: "avcodec_send_packet", code: sent).reason)
            }
        }
        var leftover: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&leftover)
        return nil
    }

    // MARK: Growing files

    private func currentFileSize() -> Int64 {
        (try? Posix.stat(item.path)).map { Int64($0.st_size) } ?? -1
    }

    private func grewSinceEnd() -> Bool {
        fileSizeAtEnd >= 0 && currentFileSize() > fileSizeAtEnd
    }

    /// The file grew after its end was read (a recording still being
    /// written): open it again and read on after the last frame shown.
    private func resumeAfterEnd() throws(PlaybackError) {
        let shownThrough = current?.pointee.best_effort_timestamp
        (file, streamIndex, stream, decoder) = try PlayerItemVideoOutput.open(item.path)
        readEnded = false
        decodeEnded = false
        fileSizeAtEnd = -1
        lastPacketTime = .min
        if let shownThrough {
            if av_seek_frame(file.context, streamIndex, shownThrough, AVSEEK_FLAG_BACKWARD) < 0 {
                _ = avformat_seek_file(file.context, streamIndex, .min, .min, .min, AVSEEK_FLAG_BACKWARD)
            }
            skipThrough = shownThrough
        }
    }

    /// Whether every frame has been decoded and the file has not grown since.
    public var isAtEnd: Bool { decodeEnded && upcoming == nil && !grewSinceEnd() }

    /// For a client going quiet: calls `handler` once, on another thread,
    /// when frames after the last one handed out can be pulled. With frames
    /// still ahead that is after `interval`; at the end of a file that is
    /// still being written, as soon as it grows. A new request replaces the
    /// previous one.
    public func requestNotificationOfMediaDataChange(withAdvanceInterval interval: MediaTime, handler: @escaping @Sendable () -> Void) {
        let path = item.path
        let waitForGrowth = decodeEnded && upcoming == nil
        let sizeAtEnd = fileSizeAtEnd >= 0 ? fileSizeAtEnd : currentFileSize()
        notifier.start(interval: interval, handler: handler) {
            guard waitForGrowth else { return true }
            guard let info = try? Posix.stat(path) else { return false }
            return Int64(info.st_size) > sizeAtEnd
        }
    }
}

/// Runs the wait behind `requestNotificationOfMediaDataChange` on a thread
/// of its own, polling a condition until it holds or the request is cancelled.
final class MediaDataNotifier: Sendable {
    /// Raised by each request and each cancel: a job whose generation is no longer current ends.
    private let generation = Mutex(0)
    private let startFailure = Mutex<SystemCallError?>(nil)

    func start(interval: MediaTime, handler: @escaping @Sendable () -> Void, ready: @escaping @Sendable () -> Bool) {
        let mine: Int = generation.withLock { $0 += 1; return $0 }
        let delay = interval.isNumeric ? max(0, min(interval.seconds, 3600)) : 0
        let job = NotifierJob(owner: self, generation: mine, delay: delay, handler: handler, ready: ready)
        do {
            pthread_detach(try Posix.createThread(name: "media data notifier") { job.run() })
            startFailure.withLock { $0 = nil }
        } catch {
            startFailure.withLock { $0 = error }
        }
    }

    /// Why the last request's thread could not be made (`pthread_create(media
    /// data notifier)`), if it could not: that request is never answered.
    var lastStartFailure: SystemCallError? { startFailure.withLock { $0 } }

    func isCurrent(_ generation: Int) -> Bool { self.generation.withLock { $0 == generation } }

    func cancel() { generation.withLock { $0 += 1 } }
}

private final class NotifierJob {
    let owner: MediaDataNotifier
    let generation: Int
    let delay: Double
    let handler: @Sendable () -> Void
    let ready: @Sendable () -> Bool

    init(owner: MediaDataNotifier, generation: Int, delay: Double, handler: @escaping @Sendable () -> Void, ready: @escaping @Sendable () -> Bool) {
        self.owner = owner
        self.generation = generation
        self.delay = delay
        self.handler = handler
        self.ready = ready
    }

    func run() {
        var waited = 0.0
        let step = 0.01
        while owner.isCurrent(generation) {
            if waited >= delay, ready() {
                if owner.isCurrent(generation) { handler() }
                return
            }
            Posix.sleep(nanoseconds: Int64(step * 1_000_000_000))
            waited += step
        }
    }
}
