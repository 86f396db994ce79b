import CFFmpeg

/// The thread behind one live stream: it takes compressed video from the
/// input's shared compression stage and raw audio from the session, encodes
/// the audio, and sends both to the server through a `StreamMuxer`;
/// it reconnects with growing waits when the server refuses, stalls or goes
/// away, and starts each connection at a keyframe.
///
/// Everything reaches it through one bounded queue, so neither capture nor
/// the encoder nor a file output ever waits on the network: a full queue
/// drops (and counts) what does not fit, and video then skips to the next
/// keyframe, which it asks the stage for.
final class StreamPublisher: CompressedVideoSink, @unchecked Sendable {
    // @unchecked: the properties under "The stream's thread" (the FFmpeg
    // muxer and audio encoder among them) are used only on that thread
    // (`run`, and the audio extension it calls), without a lock per frame;
    // everything shared is behind `shared` or immutable.

    struct Configuration {
        var destination: StreamDestination
        var video: (codecName: String, width: Int, height: Int)?
        var audio: AudioOutputSettings?
        var policy: LiveStreamConnectionPolicy
        var maxDuration: MediaTime
        var queueCapacity: Int
    }

    enum Item {
        case video(VideoSampleBuffer)
        case audio(AudioSampleBuffer)
    }

    private struct Queued {
        let item: Item
        /// When it was queued, on the capture clock (nanoseconds).
        let queuedAt: Int64
    }

    struct Shared {
        var statistics = LiveStreamStatistics()
        /// A keyframe is wanted at the next picture (a connection began, or video was dropped).
        var keyframeWanted = false
        /// Video was dropped at the queue: what follows cannot be decoded until a keyframe.
        var videoBroken = false
        /// A keyframe is to be asked for once the queue has room again (asked
        /// at once, it would be refused too, and a link slower than the
        /// stream would turn every frame, the file's too, into a keyframe).
        var keyframeOwed = false
        /// The stream's video input has ended: audio alone goes on.
        var videoEnded = false
        var ending: LiveStreamEndReason?
        /// Where the stream ends on the capture clock: what was captured from
        /// then on is not part of it (neither sent nor dropped).
        var endTime: Int64?
        /// When stopping must have sent what it can (nanoseconds on the capture clock).
        var drainDeadline: Int64?
    }

    let configuration: Configuration
    private let queue: BoundedQueue<Queued>
    let shared = Locked(Shared())
    private let deadline = StreamDeadline()
    private let thread = Locked<CaptureThread?>(nil)
    private let events: @Sendable (Event) -> Void

    /// What the publisher tells its output (on the publisher's thread).
    enum Event {
        case connected
        case disconnected(WriterError)
        case reconnecting(after: MediaTime, attempt: Int)
        case finished(LiveStreamEndReason, LiveStreamStatistics)
    }

    // MARK: The stream's thread
    var muxer: StreamMuxer?
    var audioEncoder: AudioEncoder?
    /// The current connection's time zero: its first keyframe's capture time.
    var origin: MediaTime?
    /// When the stream's first frame (without video, its first sample) was
    /// captured, connected or not: `maxDuration` counts from it.
    private var firstOrigin: MediaTime?
    var lastSentTime: MediaTime?
    private var needsKeyframe = true
    private var parameterSets: [UInt8]?
    /// Audio that came before the connection's first keyframe (encoded video
    /// arrives after the audio captured with it), at most a second of it.
    private var pendingAudio: [AudioSampleBuffer] = []
    private var attempt = 0
    private var retryAt: Int64?
    private var everConnected = false
    /// Bytes sent over the connections before this one.
    var sentBefore: Int64 = 0
    /// Media time sent over the connections before this one.
    var durationBefore: MediaTime = .zero
    /// The stream time of the last frame sent on this connection.
    private var previousFrameTime: Int64?

    init(configuration: Configuration, events: @escaping @Sendable (Event) -> Void) {
        self.configuration = configuration
        self.events = events
        queue = BoundedQueue(capacity: max(configuration.queueCapacity, 16))
    }

    func start() {
        shared.withLock { $0.statistics.state = .connecting }
        do {
            let started = try CaptureThread.start(name: "stream") { [self] in run() }
            thread.withLock { $0 = started }
        } catch {
            // No thread to send from: the stream ends as failed, as one whose settings were refused.
            let failure = WriterError.stream(what: "start", reason: "cannot start the stream's thread: \(error)")
            let statistics = shared.withLock { shared in
                shared.statistics.state = .finished
                shared.statistics.lastError = failure
                return shared.statistics
            }
            events(.finished(.failed(failure), statistics))
        }
    }

    var statistics: LiveStreamStatistics {
        let oldest = queue.oldest { $0.queuedAt }
        return shared.withLock { shared in
            var statistics = shared.statistics
            if let oldest { statistics.queueLatency = MediaTime(value: max(0, MonotonicClock.nowNanoseconds() - oldest), timescale: MonotonicClock.timescale) }
            return statistics
        }
    }

    // MARK: Input (capture and stage threads)

    /// From the capture thread: raw audio of the stream's audio input. It is
    /// queued as a copy: the device lends its few buffers, and a queue that
    /// waits for a slow or absent server would keep them from the device,
    /// which then drops audio for the file too.
    func capture(_ audio: AudioSampleBuffer) {
        // After the end, nothing more belongs to the stream: not a drop.
        guard !queue.put(Queued(item: .audio(audio.copied()), queuedAt: MonotonicClock.nowNanoseconds())), !queue.isClosed else { return }
        shared.withLock { $0.statistics.droppedAudioSamples += Int64(audio.frameCount) }
    }

    func compressionStage(_ stage: VideoCompressionStage, wantsKeyframeAt time: MediaTime) -> Bool {
        shared.withLock { shared in
            defer { shared.keyframeWanted = false }
            return shared.keyframeWanted
        }
    }

    func compressionStage(_ stage: VideoCompressionStage, didEncode sample: VideoSampleBuffer) {
        let skip = shared.withLock { shared -> Bool in
            if sample.isKeyframe { shared.videoBroken = false }
            guard shared.videoBroken else { return false }
            shared.statistics.droppedVideoFrames += 1
            return true
        }
        guard !skip else { return }
        if !queue.put(Queued(item: .video(sample), queuedAt: MonotonicClock.nowNanoseconds())), !queue.isClosed {
            shared.withLock { shared in
                shared.statistics.droppedVideoFrames += 1
                shared.videoBroken = true
                shared.keyframeOwed = true
            }
        }
    }

    func compressionStage(_ stage: VideoCompressionStage, didFail error: WriterError) {
        finish(.failed(error))
    }

    /// Ends the stream: what is queued is sent (within the policy's drain
    /// time), then the container's end. Returns at once; `join()` waits.
    func finish(_ reason: LiveStreamEndReason, at endTime: MediaTime? = nil) {
        shared.withLock { shared in
            if shared.ending == nil {
                shared.ending = reason
                shared.endTime = (endTime ?? MonotonicClock.now()).nanoseconds.value
            }
            if shared.drainDeadline == nil {
                shared.drainDeadline = MonotonicClock.nowNanoseconds() + configuration.policy.drainTime.nanoseconds.value
            }
        }
        // A connection or write under way gives up at the drain deadline too.
        if let cutoff = shared.withLock({ $0.drainDeadline }) { deadline.cut(at: cutoff) }
        queue.close()
    }

    func join() { thread.withLock { $0 }?.join() }

    /// The video input ended (a camera went away): the stream goes on with audio alone.
    func videoDidEnd() { shared.withLock { $0.videoEnded = true } }

    /// Whether video leads the stream (its time zero, its limit): it has a
    /// video input that has not ended.
    private var videoLeads: Bool { configuration.video != nil && !shared.withLock { $0.videoEnded } }

    // MARK: The stream's thread

    private func run() {
        while true {
            let wait = retryAt.map { max(0, $0 - MonotonicClock.nowNanoseconds()) }
            let queued = queue.take(timeoutNanoseconds: wait)
            if queued == nil && queue.isClosed && queue.isEmpty { break }
            askForOwedKeyframe()
            if shared.withLock({ $0.ending }) != nil {
                // Stopping: send what is queued while the connection holds; no new attempts.
                guard let queued, isBeforeEnd(queued.item) else { continue }
                if muxer != nil, !drainTimeIsUp { handle(queued.item) } else { drop(queued.item) }
                continue
            }
            if muxer == nil, let retryAt, MonotonicClock.nowNanoseconds() >= retryAt { self.retryAt = nil }
            if let queued { handle(queued.item) }
            if muxer == nil, retryAt == nil, canConnect { connect() }
        }
        end()
    }

    private func isBeforeEnd(_ item: Item) -> Bool {
        let time = switch item {
        case .video(let sample): sample.presentationTime
        case .audio(let audio): audio.presentationTime
        }
        return shared.withLock { $0.endTime }.map { time.nanoseconds.value < $0 } ?? true
    }

    /// After an overflow, a keyframe is asked for once the queue is half empty.
    private func askForOwedKeyframe() {
        guard shared.withLock({ $0.keyframeOwed }), queue.queuedCount <= queue.capacity / 2 else { return }
        shared.withLock { shared in
            shared.keyframeOwed = false
            shared.keyframeWanted = true
        }
    }

    private var drainTimeIsUp: Bool {
        shared.withLock { $0.drainDeadline }.map { MonotonicClock.nowNanoseconds() >= $0 } ?? false
    }

    /// Whether everything the header needs is known: the video's parameter sets.
    private var canConnect: Bool { !videoLeads || parameterSets != nil }

    private func handle(_ item: Item) {
        switch item {
        case .video(let sample) where reachesLimit(sample.presentationTime, isVideo: true): return
        case .audio(let audio) where reachesLimit(audio.presentationTime, isVideo: false): return
        case .video(let sample):
            if sample.isKeyframe, let sets = Self.parameterSets(of: sample) { parameterSets = sets }
            if muxer == nil, retryAt == nil, canConnect { connect() }
            guard muxer != nil, !(needsKeyframe && !sample.isKeyframe) else { return drop(item) }
            needsKeyframe = false
            if origin == nil { begin(at: sample.presentationTime) }
            send(sample)
        case .audio(let audio):
            if !videoLeads, muxer == nil, retryAt == nil { connect() }
            guard muxer != nil else { return drop(item) }
            if !videoLeads, origin == nil { begin(at: audio.presentationTime) }
            guard origin != nil else {
                pendingAudio.append(audio)
                trimPendingAudio()
                return
            }
            encode(audio)
        }
    }

    /// The connection's first sample: time zero, and the audio held for it.
    private func begin(at time: MediaTime) {
        origin = time
        let held = pendingAudio
        pendingAudio = []
        for audio in held { encode(audio) }
    }

    private func trimPendingAudio() {
        guard let last = pendingAudio.last else { return }
        let limit = last.presentationTime.nanoseconds.value - 1_000_000_000
        while let first = pendingAudio.first, first.presentationTime.nanoseconds.value < limit {
            pendingAudio.removeFirst()
            shared.withLock { $0.statistics.droppedAudioSamples += Int64(first.frameCount) }
        }
    }

    func drop(_ item: Item) {
        shared.withLock { shared in
            switch item {
            case .video: shared.statistics.droppedVideoFrames += 1
            case .audio(let audio): shared.statistics.droppedAudioSamples += Int64(audio.frameCount)
            }
        }
    }

    var writeTimeout: Int64 {
        let timeout = configuration.policy.timeout.nanoseconds.value
        guard let drain = shared.withLock({ $0.drainDeadline }) else { return timeout }
        return max(1, min(timeout, drain - MonotonicClock.nowNanoseconds()))
    }

    private func send(_ sample: VideoSampleBuffer, into muxer: StreamMuxer? = nil) {
        guard let muxer = muxer ?? self.muxer, let origin else { return }
        let time = sample.presentationTime.nanoseconds.value - origin.nanoseconds.value
        guard time >= 0 else { return drop(.video(sample)) }
        do throws(WriterError) {
            try muxer.writeVideo(sample.bytes, time: time, duration: sample.duration?.nanoseconds.value, isKeyframe: sample.isKeyframe,
                                 timeout: writeTimeout)
        } catch {
            drop(.video(sample))
            return lose(error)
        }
        // Up to the end of the frame just sent (without a duration of its
        // own, it lasts as long as the step from the frame before).
        let step = sample.duration?.nanoseconds.value ?? previousFrameTime.map { time - $0 } ?? 0
        previousFrameTime = time
        shared.withLock { $0.statistics.videoFramesSent += 1 }
        advanceSent(to: time + step, muxer: muxer)
    }

    /// What was sent reaches `end` nanoseconds into this connection.
    func advanceSent(to end: Int64, muxer: StreamMuxer) {
        guard let origin, end > (lastSentTime.map { $0.nanoseconds.value - origin.nanoseconds.value } ?? -1) else {
            shared.withLock { $0.statistics.bytesSent = sentBefore + muxer.bytesWritten }
            return
        }
        lastSentTime = MediaTime(value: origin.nanoseconds.value + end, timescale: MonotonicClock.timescale)
        let duration = durationBefore + MediaTime(value: end, timescale: MonotonicClock.timescale)
        let bytes = sentBefore + muxer.bytesWritten
        shared.withLock { shared in
            shared.statistics.bytesSent = bytes
            shared.statistics.durationSent = duration
        }
    }

    /// Whether `time` is at or past `maxDuration` from the stream's first
    /// frame (its first sample, without video), the network's state aside:
    /// a limit counts captured media time. The stream then ends there.
    private func reachesLimit(_ time: MediaTime, isVideo: Bool) -> Bool {
        if firstOrigin == nil, isVideo || !videoLeads { firstOrigin = time }
        guard let firstOrigin, configuration.maxDuration.isNumeric else { return false }
        let end = firstOrigin.nanoseconds.value + configuration.maxDuration.nanoseconds.value
        guard time.nanoseconds.value >= end else { return false }
        finish(.maxDuration, at: MediaTime(value: end, timescale: MonotonicClock.timescale))
        return true
    }

    // MARK: Connections

    private func connect() {
        shared.withLock { $0.statistics.state = everConnected || attempt > 0 ? .reconnecting : .connecting }
        let video = configuration.video.map { StreamMuxer.Video(codecName: $0.codecName, width: $0.width, height: $0.height,
                                                                parameterSets: parameterSets ?? []) }
        do throws(WriterError) {
            let encoder = try configuration.audio.map { settings throws(WriterError) in try AudioEncoder(settings: settings, globalHeader: true) }
            let connected = try StreamMuxer(destination: configuration.destination, video: video, audio: encoder,
                                            timeout: configuration.policy.timeout.nanoseconds.value, deadline: deadline)
            muxer = connected
            audioEncoder = encoder
        } catch {
            if case .stream = error { return fail(error) }
            return end(failing: error)
        }
        attempt = 0
        retryAt = nil
        everConnected = true
        origin = nil
        needsKeyframe = true
        shared.withLock { shared in
            shared.statistics.state = .connected
            shared.statistics.connections += 1
            shared.statistics.lastError = nil
            shared.keyframeWanted = true
        }
        events(.connected)
    }

    /// The connection was lost while sending (or, when stopping, cut off at the drain deadline).
    func lose(_ error: WriterError) {
        closeConnection(gracefully: false)
        guard shared.withLock({ $0.ending }) == nil else { return }
        fail(error)
    }

    /// A failed attempt or a lost connection: the next attempt is scheduled.
    private func fail(_ error: WriterError) {
        guard shared.withLock({ $0.ending }) == nil else { return }
        attempt += 1
        let delay = configuration.policy.delay(beforeAttempt: attempt)
        retryAt = MonotonicClock.nowNanoseconds() + delay.nanoseconds.value
        shared.withLock { shared in
            shared.statistics.state = .reconnecting
            shared.statistics.failures += 1
            shared.statistics.lastError = error
        }
        events(.disconnected(error))
        events(.reconnecting(after: delay, attempt: attempt))
    }

    private func closeConnection(gracefully: Bool) {
        guard let muxer else { return }
        if gracefully, let encoder = audioEncoder {
            let timeout = writeTimeout
            try? encoder.flush { packet throws(WriterError) in try self.sendAudio(packet, into: muxer, timeout: timeout) }
        }
        muxer.close(gracefully: gracefully, timeout: writeTimeout)
        sentBefore += muxer.bytesWritten
        if let origin, let lastSentTime {
            durationBefore = durationBefore
                + MediaTime(value: max(0, lastSentTime.nanoseconds.value - origin.nanoseconds.value), timescale: MonotonicClock.timescale)
        }
        let (bytes, duration) = (sentBefore, durationBefore)
        shared.withLock { shared in
            shared.statistics.bytesSent = bytes
            shared.statistics.durationSent = duration
        }
        self.muxer = nil
        audioEncoder = nil
        origin = nil
        lastSentTime = nil
        previousFrameTime = nil
        for audio in pendingAudio { drop(.audio(audio)) }
        pendingAudio = []
    }

    /// Something no new connection mends: the stream ends with it.
    func end(failing error: WriterError) {
        shared.withLock { $0.statistics.lastError = error }
        finish(.failed(error))
        closeConnection(gracefully: false)
    }

    private func end() {
        closeConnection(gracefully: true)
        let (reason, statistics) = shared.withLock { shared in
            shared.statistics.state = .finished
            shared.statistics.queueLatency = .zero
            return (shared.ending ?? .stopped, shared.statistics)
        }
        events(.finished(reason, statistics))
    }

    /// The parameter sets (Annex B, with start codes) an H.264/HEVC keyframe carries in band.
    private static func parameterSets(of sample: VideoSampleBuffer) -> [UInt8]? {
        guard case .compressed(let codecName) = sample.layout, let codec = AccessUnit.Codec(codecName: codecName) else { return nil }
        let unit = AccessUnit(sample.bytes, codec: codec)
        guard unit.hasParameterSets else { return nil }
        var sets: [UInt8] = []
        for range in unit.parameterSetRanges { sets.append(contentsOf: sample.bytes[range]) }
        return sets
    }
}
