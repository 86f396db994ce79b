import CFFmpeg

/// The thread of a live stream (`StreamPublisher`): its connection, the
/// stream's audio encoder and where the stream is, used on that thread
/// alone without a lock per frame; what others see is behind the
/// publisher's `shared`.
final class StreamSender {
    typealias Item = StreamPublisher.Item
    let publisher: StreamPublisher

    init(publisher: StreamPublisher) {
        self.publisher = publisher
    }

    private var configuration: StreamPublisher.Configuration { publisher.configuration }
    private var queue: BoundedQueue<StreamPublisher.Queued> { publisher.queue }
    var shared: Locked<StreamPublisher.Shared> { publisher.shared }
    private var deadline: StreamDeadline { publisher.deadline }
    private var videoLeads: Bool { publisher.videoLeads }
    private func events(_ event: StreamPublisher.Event) { publisher.events(event) }
    private func finish(_ reason: LiveStreamEndReason, at endTime: MediaTime? = nil) { publisher.finish(reason, at: endTime) }

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


    func run() {
        while true {
            var wait = retryAt.map { max(0, $0 - MonotonicClock.nowNanoseconds()) }
            // Stopping while the encoder's last frames are awaited: look again at the drain deadline.
            if let left = publisher.closeIfDrainTimeIsUp() { wait = min(wait ?? left, left) }
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
