/// Publishes a session's camera and microphone to a media server (RTMP,
/// SRT, RTSP, UDP) while it runs, next to any file output: the network
/// counterpart of `MovieFileOutput`, which AVFoundation does not have.
///
/// Video comes from the input's shared compression stage: a stream whose
/// video settings equal a movie output's takes the very frames that movie
/// writes, so one encode feeds both; other settings get an encoder of their
/// own. Audio is encoded for the stream (AAC unless `settings.audioCodec`
/// says otherwise). The first video input and the first audio input are sent.
///
/// The network never holds anything up: the stream has its own thread and
/// a bounded queue, drops (and counts) what a slow or lost connection cannot
/// take, reconnects with growing waits (see `connectionPolicy`), and starts
/// each connection at a keyframe. A movie output recording beside it is
/// untouched by whatever the network does.
public final class LiveStreamOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: `lock` guards `sessionInputs`, `publisher`, `joined`, `audioInput`,
    // `wanted`, `ended`, `lastStatistics` and `delegate`; the settings are set before streaming starts.

    /// Where the stream goes.
    public let destination: StreamDestination
    /// How video and audio are encoded. Video settings equal to a movie
    /// output's share its encoder. Live capture asks for `realTime` (it is
    /// required: a stream's encoder must not reorder frames).
    public var settings = RecordingSettings()
    /// At most this long between keyframes: where a viewer, or the stream
    /// after a reconnection, can start. Shared encoders make them for every
    /// sink.
    public var keyframeInterval = MediaTime(value: 2, timescale: 1)
    public var connectionPolicy = LiveStreamConnectionPolicy()
    /// Samples and frames that may wait for the network before new ones are dropped.
    public var queueCapacity = 512
    /// Stop after this much media time has been captured for the stream (invalid: no limit).
    public var maxStreamedDuration: MediaTime = .invalid

    private let lock = Lock()
    private var sessionInputs: [CaptureInput]?
    private var publisher: StreamPublisher?
    private var joined: (input: CaptureInput, stage: VideoCompressionStage)?
    /// Frames the shared encoder dropped (it fell behind capture) while the
    /// stream was a sink of it: before they were encoded, so the stream never saw them.
    private var encoderDrops = (atJoin: 0, left: 0)
    private var audioInput: CaptureInput?
    private var wanted = false
    /// The publisher's thread has ended (it is kept to be joined).
    private var ended = false
    private var lastStatistics = LiveStreamStatistics()
    private weak var delegate: (any LiveStreamOutputDelegate)?

    public init(destination: StreamDestination) {
        self.destination = destination
        super.init()
    }

    /// Starts publishing: now on a running session, else when it starts.
    /// Settings the stream cannot take end it at once (the delegate hears
    /// `didFinishWith` `.failed`), as does a session whose start they stop.
    public func startStreaming(delegate: (any LiveStreamOutputDelegate)?) {
        let inputs = lock.withLock { () -> [CaptureInput]? in
            self.delegate = delegate
            wanted = true
            return publisher == nil || ended ? sessionInputs : nil
        }
        guard let inputs else { return }
        do throws(WriterError) { try begin(inputs) } catch { endBeforeBeginning(error) }
    }

    /// Sends what is queued (within the policy's drain time), ends the stream
    /// and closes the connection. `waitUntilFinished()` waits for it. What
    /// was captured before the stop and is still in the encoder is sent too
    /// (or counted as dropped once the drain time is up): the stream leaves
    /// the encoder when it has finished.
    public func stopStreaming() {
        let running = lock.withLock { () -> StreamPublisher? in
            wanted = false
            return publisher
        }
        guard let running else { return leaveStage() }
        running.finish(.stopped, waitingForEncoder: lock.withLock { joined != nil })
    }

    /// Waits until the stream's thread has ended.
    public func waitUntilFinished() {
        lock.withLock { publisher }?.join()
    }

    public var isStreaming: Bool { lock.withLock { publisher != nil && !ended } }

    /// What has been sent and dropped so far (or in all, once it ended).
    public var statistics: LiveStreamStatistics {
        guard let publisher = lock.withLock({ ended ? nil : publisher }) else { return lock.withLock { lastStatistics } }
        var statistics = publisher.statistics
        statistics.droppedVideoFrames += droppedByEncoder
        return statistics
    }

    /// Frames the shared encoder dropped for this stream so far.
    private var droppedByEncoder: Int {
        lock.withLock { encoderDrops.left + (joined.map { max(0, $0.stage.droppedFrames - encoderDrops.atJoin) } ?? 0) }
    }

    // MARK: The session

    public override func sessionWillStartRunning(inputs: [CaptureInput]) throws(CaptureError) {
        let start = lock.withLock { () -> Bool in
            sessionInputs = inputs
            return wanted && (publisher == nil || ended)
        }
        guard start else { return }
        do throws(WriterError) {
            try begin(inputs)
        } catch {
            endBeforeBeginning(error)
            throw .source("stream \(destination)", reason: error.description)
        }
    }

    public override func sessionDidChangeInputs(_ inputs: [CaptureInput]) {
        lock.withLock { if sessionInputs != nil { sessionInputs = inputs } }
    }

    public override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard case .audio(let audio) = sample else { return }
        let target = lock.withLock { audioInput === input ? publisher : nil }
        target?.capture(audio)
    }

    public override func input(_ input: CaptureInput, didEnd end: CaptureEnd) {
        let (target, isVideoInput, allEnded) = lock.withLock { () -> (StreamPublisher?, Bool, Bool) in
            if audioInput === input { audioInput = nil }
            let isVideoInput = joined?.input === input
            let noVideoLeft = joined == nil || isVideoInput
            return (publisher, isVideoInput, noVideoLeft && audioInput == nil)
        }
        if isVideoInput {
            leaveStage()
            target?.videoDidEnd()
        }
        if allEnded { target?.finish(.inputEnded(end)) }
    }

    public override func sessionDidStopRunning() {
        let running = lock.withLock { () -> StreamPublisher? in
            sessionInputs = nil
            return publisher
        }
        leaveStage()
        running?.finish(.stopped)
    }

    // MARK: Starting

    private func begin(_ inputs: [CaptureInput]) throws(WriterError) {
        // A disabled connection's input is left out, as a recording leaves it out of its files.
        let videoInput = inputs.first { $0.mediaType == .video && $0.videoFormat != nil && isConnectionEnabled(for: $0) }
        let audio = inputs.first { $0.mediaType == .audio && $0.source.audioFormat != nil && isConnectionEnabled(for: $0) }
        guard videoInput != nil || audio != nil else {
            let disabled = inputs.contains { !isConnectionEnabled(for: $0) }
            throw .invalidState(disabled ? "every connection of the stream to a camera or microphone is disabled"
                                         : "the session has no camera or microphone to stream")
        }
        var videoSettings: VideoOutputSettings?
        if let videoInput, let format = videoInput.videoFormat {
            videoSettings = try streamVideoSettings(for: format)
        }
        var audioSettings: AudioOutputSettings?
        if let format = audio?.source.audioFormat {
            let codec = settings.audioCodec ?? .aac
            guard codec == .aac || (codec == .opus && destination.format != .flv) else {
                throw .invalidSettings("a \(destination.format.rawValue) stream cannot carry \(codec.name) audio; use aac")
            }
            // AAC takes the usual rates up to 96 kHz; anything else is resampled to 48 kHz.
            let aacRates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000]
            let rate = codec == .opus || !aacRates.contains(format.sampleRate) ? 48000 : format.sampleRate
            audioSettings = AudioOutputSettings(codec: codec, sampleRate: rate, channels: min(format.channels, 2),
                                                bitRate: settings.audioBitRate ?? 128_000)
        }
        let made = StreamPublisher(configuration: .init(destination: destination,
                                                        video: videoSettings.map { ($0.codec == .hevc ? "hevc" : "h264", $0.width, $0.height) },
                                                        audio: audioSettings, policy: connectionPolicy, maxDuration: maxStreamedDuration,
                                                        queueCapacity: queueCapacity),
                                   events: { [weak self] event in self?.publisherDidReport(event) })
        if let videoInput, let videoSettings {
            let configuration = videoInput.videoFormat?.codecConfiguration ?? []
            let stage = try videoInput.compression.join(made, settings: videoSettings, keyframeInterval: keyframeInterval,
                                                        decodingConfiguration: configuration, queueCapacity: queueCapacity)
            lock.withLock {
                joined = (videoInput, stage)
                encoderDrops = (stage.droppedFrames, 0)
            }
        }
        lock.withLock {
            publisher = made
            ended = false
            audioInput = audio
        }
        made.start()
    }

    /// The video settings the stream encodes with; they must be shareable
    /// (nothing reordered) and fit the container.
    private func streamVideoSettings(for format: CaptureVideoFormat) throws(WriterError) -> VideoOutputSettings {
        var codec = VideoCodec.h264
        if case .encode(let chosen) = settings.video { codec = chosen }
        let video: VideoOutputSettings
        do throws(RecordingError) {
            video = try settings.videoOutputSettings(for: format, codec: codec)
        } catch {
            throw .invalidSettings(error.description)
        }
        guard destination.format.videoCodecs.contains(codec == .hevc ? "hevc" : codec.rawValue) else {
            throw .invalidSettings("a \(destination.format.rawValue) stream cannot carry \(codec.rawValue) video; use h264")
        }
        guard VideoCompressor.canShare(video) else {
            throw .invalidSettings("a stream needs an encoder that sends each frame as it comes (live settings, no B-frames)")
        }
        return video
    }

    private func endBeforeBeginning(_ error: WriterError) {
        let target = lock.withLock { () -> (any LiveStreamOutputDelegate)? in
            wanted = false
            lastStatistics.state = .finished
            return delegate
        }
        target?.liveStreamOutput(self, didFinishWith: .failed(error), statistics: statistics)
    }

    private func leaveStage() {
        guard let (input, stage) = lock.withLock({ () -> (CaptureInput, VideoCompressionStage)? in
            defer { joined = nil }
            if let joined { encoderDrops.left += max(0, joined.stage.droppedFrames - encoderDrops.atJoin) }
            return joined
        }), let publisher = lock.withLock({ publisher }) else { return }
        input.compression.leave(publisher, stage: stage)
    }

    private func publisherDidReport(_ event: StreamPublisher.Event) {
        let target = lock.withLock { delegate }
        switch event {
        case .connected: target?.liveStreamOutputDidConnect(self)
        case .disconnected(let error): target?.liveStreamOutput(self, didDisconnectWith: error)
        case .reconnecting(let delay, let attempt): target?.liveStreamOutput(self, willReconnectAfter: delay, attempt: attempt)
        case .finished(let reason, var statistics):
            leaveStage()
            statistics.droppedVideoFrames += droppedByEncoder
            lock.withLock {
                lastStatistics = statistics
                ended = true
            }
            target?.liveStreamOutput(self, didFinishWith: reason, statistics: statistics)
        }
    }
}
