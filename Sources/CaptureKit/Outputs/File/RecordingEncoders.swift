/// The shared encoders one recording takes its video from: for each video
/// input whose settings can be shared, the input's compression stage for
/// those settings. It asks the stage for a keyframe where the recording
/// will begin a file, a segment or a resumed stretch, and hands the
/// compressed frames to the recording's queue.
final class RecordingEncoders: CompressedVideoSink {
    private struct Joined {
        let index: Int
        let input: CaptureInput
        let stage: VideoCompressionStage
        let beforeKeyframeAtJoin: Int
    }

    private struct Requests {
        /// A keyframe is wanted at the next picture.
        var keyframe = false
        /// A keyframe is wanted at the first picture at or after this time (a segment's end).
        var keyframeAt: MediaTime?
    }

    private let joined = Locked<[Joined]>([])
    /// The frames before a keyframe of the stages left, for this recording.
    private let beforeKeyframeOfStagesLeft = Locked(0)
    private let requests = Locked(Requests())
    private let deliver: @Sendable (Int, VideoSampleBuffer) -> Void
    private let failed: @Sendable (WriterError) -> Void

    /// `deliver` takes each compressed frame with its input's position;
    /// `failed` hears an encoder that stopped working.
    init(deliver: @escaping @Sendable (Int, VideoSampleBuffer) -> Void, failed: @escaping @Sendable (WriterError) -> Void) {
        self.deliver = deliver
        self.failed = failed
    }

    /// Joins `input`'s stage for `settings` (a new encoder if none encodes
    /// with them yet); returns the codec name of what it delivers.
    func join(_ input: CaptureInput, index: Int, settings: VideoOutputSettings, keyframeInterval: MediaTime?,
              queueCapacity: Int) throws(WriterError) -> String {
        let configuration = input.videoFormat?.codecConfiguration ?? []
        let stage = try input.compression.join(self, settings: settings, keyframeInterval: keyframeInterval,
                                               decodingConfiguration: configuration, queueCapacity: queueCapacity)
        joined.withLock {
            $0.append(Joined(index: index, input: input, stage: stage, beforeKeyframeAtJoin: stage.framesBeforeKeyframe))
        }
        return stage.codecName
    }

    /// Leaves every stage (the last sink of a stage ends it).
    func leaveAll() {
        let all = joined.withLock { joined in
            defer { joined = [] }
            return joined
        }
        let beforeKeyframe = Self.framesBeforeKeyframe(of: all)
        beforeKeyframeOfStagesLeft.withLock { $0 += beforeKeyframe }
        for entry in all { entry.input.compression.leave(self, stage: entry.stage) }
    }

    /// When the stages joined dropped frames (a full queue, refused).
    var lossLogs: [SampleLossLog] { joined.withLock { $0.map(\.stage.losses) } }

    /// A camera's compressed frames the stages could not decode, coming
    /// before its first keyframe, since the recording joined them.
    var framesBeforeKeyframe: Int {
        Self.framesBeforeKeyframe(of: joined.withLock { $0 }) + beforeKeyframeOfStagesLeft.withLock { $0 }
    }

    private static func framesBeforeKeyframe(of entries: [Joined]) -> Int {
        entries.reduce(0) { $0 + max(0, $1.stage.framesBeforeKeyframe - $1.beforeKeyframeAtJoin) }
    }

    /// Asks for a keyframe at the next picture encoded.
    func requestKeyframe() { requests.withLock { $0.keyframe = true } }

    /// Asks for a keyframe at the first picture at or after `time` (nil: none).
    func requestKeyframe(at time: MediaTime?) { requests.withLock { $0.keyframeAt = time } }

    // MARK: CompressedVideoSink

    func compressionStage(_ stage: VideoCompressionStage, wantsKeyframeAt time: MediaTime) -> Bool {
        requests.withLock { requests in
            var wanted = requests.keyframe
            requests.keyframe = false
            if let due = requests.keyframeAt, time >= due {
                wanted = true
                requests.keyframeAt = nil
            }
            return wanted
        }
    }

    func compressionStage(_ stage: VideoCompressionStage, didEncode sample: VideoSampleBuffer) {
        guard let index = joined.withLock({ $0.first { $0.stage === stage }?.index }) else { return }
        deliver(index, sample)
    }

    func compressionStage(_ stage: VideoCompressionStage, didFail error: WriterError) {
        failed(error)
    }
}
