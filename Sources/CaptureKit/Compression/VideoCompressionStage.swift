/// What takes the compressed frames of a compression stage: a recording
/// (and later a network publisher or a pre-roll ring). Called on the
/// stage's thread; each call must return at once (queue, never wait).
protocol CompressedVideoSink: AnyObject, Sendable {
    /// Asked right before the picture captured at `time` is encoded:
    /// whether this sink needs it to be a keyframe (to begin a file, a
    /// segment or a resumed stretch there).
    func compressionStage(_ stage: VideoCompressionStage, wantsKeyframeAt time: MediaTime) -> Bool
    /// One compressed frame, in capture order.
    func compressionStage(_ stage: VideoCompressionStage, didEncode sample: VideoSampleBuffer)
    /// The encoder failed: no more frames come from this stage.
    func compressionStage(_ stage: VideoCompressionStage, didFail error: WriterError)
}

/// One encoder for one input's frames with one setting, shared by every
/// sink that asks for that setting: the session's compression stage
/// (capture → fan-out per input → compression → sinks). Frames reach it
/// from the capture thread through a bounded queue (a full queue drops and
/// counts, so capture never waits on the encoder) and are encoded on the
/// stage's own thread; each sink gets the frames encoded after it joined,
/// the first of them a keyframe.
final class VideoCompressionStage: Sendable {
    let settings: VideoOutputSettings
    /// libavcodec's name of the frames that come out (`h264` …).
    let codecName: String
    private let queue: BoundedQueue<VideoSampleBuffer>
    private let state = Locked(State())
    private let thread = Locked<CaptureThread?>(nil)

    private struct Member {
        let sink: any CompressedVideoSink
        let keyframeInterval: MediaTime?
        /// The time of the first picture encoded for it (a keyframe); nil until then.
        var start: MediaTime?
    }

    private struct State {
        var members: [Member] = [] {
            didSet { shortestInterval = members.compactMap(\.keyframeInterval).filter { $0.isNumeric && $0 > .zero }.min()?.nanoseconds }
        }
        /// The shortest keyframe interval a member asks for (kept as members come and go).
        var shortestInterval: MediaTime?
        var lastKeyframe: MediaTime?
        /// Pictures the encoder could not take (out of order, damaged).
        var refused = 0
        /// A camera's compressed frames before its first keyframe (they cannot be decoded).
        var beforeKeyframe = 0
        var failed = false
    }

    /// Opens the encoder (throws what it refuses) and starts the thread.
    /// `decodingConfiguration` is what a camera's compressed frames need
    /// and do not carry (a file's avcC/hvcC record).
    init(settings: VideoOutputSettings, decodingConfiguration: [UInt8], queueCapacity: Int) throws(WriterError) {
        self.settings = settings
        // The encoder is owned by the stage's thread: made here, then used there alone.
        let compressor = try VideoCompressor(settings: settings, decodingConfiguration: decodingConfiguration)
        codecName = compressor.codecName
        queue = BoundedQueue(capacity: min(queueCapacity, Self.maximumBacklog))
        let started: CaptureThread
        do {
            started = try CaptureThread.start(name: "encoder") { [self] in run(compressor) }
        } catch {
            // Without its thread the encoder would run on the capture thread that joins it: refused instead.
            throw .invalidState("cannot start the encoder's thread: \(error)")
        }
        thread.withLock { $0 = started }
    }

    /// How many frames the encoder may fall behind capture by before new
    /// ones are dropped (about a second at 30 fps). Raw frames are large,
    /// and an encoder that cannot keep up (a slow machine, too slow a
    /// preset) would otherwise pile them up in memory and put everything
    /// recorded after them ever further behind.
    static let maximumBacklog = 32

    /// Frames dropped before they were encoded (queue full, or refused by
    /// the encoder), since the stage began; `losses` says when, so that a
    /// recording counts those inside what it recorded.
    var droppedFrames: Int { queue.refusedCount + state.withLock { $0.refused } }
    /// When those frames were captured.
    let losses = SampleLossLog()
    /// A camera's compressed frames that came before its first keyframe, since the stage began.
    var framesBeforeKeyframe: Int { state.withLock { $0.beforeKeyframe } }

    /// `sink` gets the frames encoded from now on, the first a keyframe, and
    /// a keyframe at least every `keyframeInterval` (fragments need one each).
    func add(_ sink: any CompressedVideoSink, keyframeInterval: MediaTime?) {
        state.withLock { $0.members.append(Member(sink: sink, keyframeInterval: keyframeInterval, start: nil)) }
    }

    /// `sink` gets nothing more; true when no sink is left.
    func remove(_ sink: any CompressedVideoSink) -> Bool {
        state.withLock { state in
            state.members.removeAll { $0.sink === sink }
            return state.members.isEmpty
        }
    }

    /// From the capture thread: queues a frame to encode.
    func capture(_ sample: VideoSampleBuffer) {
        if !queue.put(sample), !queue.isClosed { losses.record(1, at: sample.presentationTime) }
    }

    /// No more frames come: what is queued is encoded, the encoder's last
    /// frames are delivered, and the thread ends (this waits for it).
    func finish() {
        queue.close()
        thread.withLock { $0 }?.join()
    }

    // MARK: The stage's thread

    private func run(_ compressor: VideoCompressor) {
        while let sample = queue.take() {
            guard !state.withLock({ $0.failed }) else { continue }
            do throws(WriterError) {
                switch try compressor.encode(sample, wantsKeyframe: keyframeDecision, deliver: deliver) {
                case .encoded: break
                case .beforeKeyframe: state.withLock { $0.beforeKeyframe += 1 }
                case .refused:
                    state.withLock { $0.refused += 1 }
                    losses.record(1, at: sample.presentationTime)
                }
            } catch {
                switch error {
                case .invalidSettings, .damagedSample, .invalidState:
                    state.withLock { $0.refused += 1 }
                    losses.record(1, at: sample.presentationTime)
                default: fail(error)
                }
            }
        }
        guard !state.withLock({ $0.failed }) else { return }
        do throws(WriterError) {
            try compressor.flush(deliver: deliver)
        } catch {
            fail(error)
        }
    }

    /// Whether the picture at `time` is to be a keyframe: the first for a
    /// sink that just joined, one a sink asks for, or one a keyframe
    /// interval calls for.
    private func keyframeDecision(_ time: MediaTime) -> Bool {
        let (members, joined, lastKeyframe, interval) = state.withLock { state in
            var joined = false
            for index in state.members.indices where state.members[index].start == nil {
                state.members[index].start = time
                joined = true
            }
            return (state.members, joined, state.lastKeyframe, state.shortestInterval)
        }
        // Every sink is asked, so that a request this keyframe answers is used up.
        var wanted = joined || members.isEmpty
        for member in members where member.sink.compressionStage(self, wantsKeyframeAt: time) { wanted = true }
        if wanted { return true }
        guard let lastKeyframe else { return true }
        if let interval, time - lastKeyframe >= interval { return true }
        return false
    }

    private func deliver(_ sample: VideoSampleBuffer) {
        let members = state.withLock { state in
            if sample.isKeyframe { state.lastKeyframe = sample.presentationTime }
            return state.members
        }
        for member in members {
            guard let start = member.start, sample.presentationTime >= start else { continue }
            member.sink.compressionStage(self, didEncode: sample)
        }
    }

    private func fail(_ error: WriterError) {
        let members = state.withLock { state in
            state.failed = true
            return state.members
        }
        for member in members { member.sink.compressionStage(self, didFail: error) }
    }
}
