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
/// keyframe, which it asks the stage for. The stream's thread itself, its
/// connection and encoder, is a `StreamSender`.
final class StreamPublisher: CompressedVideoSink, Sendable {

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

    struct Queued {
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
        /// Stopping waits for the encoder's frames captured before `endTime`:
        /// the queue stays open until one at or after it comes.
        var awaitsEncoder = false
    }

    let configuration: Configuration
    let queue: BoundedQueue<Queued>
    let shared = Locked(Shared())
    let deadline = StreamDeadline()
    private let thread = Locked<CaptureThread?>(nil)
    let events: @Sendable (Event) -> Void

    /// What the publisher tells its output (on the publisher's thread).
    enum Event {
        case connected
        case disconnected(WriterError)
        case reconnecting(after: MediaTime, attempt: Int)
        case finished(LiveStreamEndReason, LiveStreamStatistics)
    }

    init(configuration: Configuration, events: @escaping @Sendable (Event) -> Void) {
        self.configuration = configuration
        self.events = events
        queue = BoundedQueue(capacity: max(configuration.queueCapacity, 16))
    }

    func start() {
        shared.withLock { $0.statistics.state = .connecting }
        do {
            // The thread's own state lives in the sender, which only that thread uses.
            let sender = StreamSender(publisher: self)
            let started = try CaptureThread.start(name: "stream") { sender.run() }
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
        // Stopping: a frame from the end on says the encoder has given every frame before it.
        let passedEnd = shared.withLock { shared -> Bool in
            guard shared.awaitsEncoder, let end = shared.endTime, sample.presentationTime.nanoseconds.value >= end else { return false }
            shared.awaitsEncoder = false
            return true
        }
        if passedEnd { return queue.close() }
        let skip = shared.withLock { shared -> Bool in
            if sample.isKeyframe { shared.videoBroken = false }
            guard shared.videoBroken else { return false }
            shared.statistics.droppedVideoFrames += 1
            return true
        }
        guard !skip else { return }
        guard !queue.put(Queued(item: .video(sample), queuedAt: MonotonicClock.nowNanoseconds())) else { return }
        let closed = queue.isClosed
        shared.withLock { shared in
            if closed {
                // After the end: a frame captured before it that the encoder
                // gave too late (past the drain time) is lost; one after it
                // never belonged to the stream.
                if let end = shared.endTime, sample.presentationTime.nanoseconds.value < end { shared.statistics.droppedVideoFrames += 1 }
                return
            }
            shared.statistics.droppedVideoFrames += 1
            shared.videoBroken = true
            shared.keyframeOwed = true
        }
    }

    func compressionStage(_ stage: VideoCompressionStage, didFail error: WriterError) {
        finish(.failed(error))
    }

    /// Ends the stream: what is queued is sent (within the policy's drain
    /// time), then the container's end. Returns at once; `join()` waits.
    ///
    /// Stopped with video from an encoder still running, the frames
    /// captured before the end that the encoder still holds (its lookahead,
    /// or a backlog on a busy machine) are waited for, as a file waits for
    /// them at its cut, until a frame from the end on comes or the drain
    /// time is up (`closeIfDrainTimeIsUp()`): they are sent, or, coming
    /// later, counted as dropped. The stage must stay joined until the
    /// stream has finished.
    func finish(_ reason: LiveStreamEndReason, at endTime: MediaTime? = nil, waitingForEncoder: Bool = false) {
        let waits = shared.withLock { shared -> Bool in
            if shared.ending == nil {
                shared.ending = reason
                shared.endTime = (endTime ?? MonotonicClock.now()).nanoseconds.value
                shared.awaitsEncoder = waitingForEncoder && reason == .stopped && configuration.video != nil && !shared.videoEnded
            } else if !waitingForEncoder {
                // The session stopped, or the stream failed: no more frames come.
                shared.awaitsEncoder = false
            }
            if shared.drainDeadline == nil {
                shared.drainDeadline = MonotonicClock.nowNanoseconds() + configuration.policy.drainTime.nanoseconds.value
            }
            return shared.awaitsEncoder
        }
        // A connection or write under way gives up at the drain deadline too.
        if let cutoff = shared.withLock({ $0.drainDeadline }) { deadline.cut(at: cutoff) }
        if !waits { queue.close() }
    }

    /// While stopping waits for the encoder: closes the queue once the
    /// drain time is up. Answers when to look again (nanoseconds from now), nil when not waiting.
    func closeIfDrainTimeIsUp() -> Int64? {
        let left = shared.withLock { shared -> Int64? in
            guard shared.awaitsEncoder, let deadline = shared.drainDeadline else { return nil }
            let left = deadline - MonotonicClock.nowNanoseconds()
            if left <= 0 { shared.awaitsEncoder = false }
            return left
        }
        guard let left else { return nil }
        if left <= 0 { queue.close(); return nil }
        return left
    }

    func join() { thread.withLock { $0 }?.join() }

    /// The video input ended (a camera went away): the stream goes on with
    /// audio alone; a stop that waited for its encoder waits no longer.
    func videoDidEnd() {
        let waited = shared.withLock { shared -> Bool in
            shared.videoEnded = true
            defer { shared.awaitsEncoder = false }
            return shared.awaitsEncoder
        }
        if waited { queue.close() }
    }

    /// Whether video leads the stream (its time zero, its limit): it has a
    /// video input that has not ended.
    var videoLeads: Bool { configuration.video != nil && !shared.withLock { $0.videoEnded } }
}
