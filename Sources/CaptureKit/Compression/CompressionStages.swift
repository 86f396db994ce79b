/// The compression stages of one input: one `VideoCompressionStage` per
/// distinct setting that a sink asked for, made on the first request and
/// ended when its last sink leaves, so that two recordings of the same
/// camera with the same settings encode it once.
final class CompressionStages: Sendable {
    // A pthread mutex (`Locked`) rather than Synchronization's Mutex: the
    // thread sanitizer sees its ordering, which it does not see in Mutex's.
    private let stages = Locked<[VideoOutputSettings: VideoCompressionStage]>([:])
    /// The same stages as a list, kept beside the dictionary so that each
    /// frame takes a copy of it (a reference) rather than building one.
    private let running = Locked<[VideoCompressionStage]>([])

    /// The stage encoding with `settings` (made now if none does), with
    /// `sink` added to it. Throws what the encoder refuses.
    func join(_ sink: any CompressedVideoSink, settings: VideoOutputSettings, keyframeInterval: MediaTime?,
              decodingConfiguration: [UInt8], queueCapacity: Int) throws(WriterError) -> VideoCompressionStage {
        let stage = try stages.withLock { stages throws(WriterError) -> VideoCompressionStage in
            if let existing = stages[settings] { return existing }
            let made = try VideoCompressionStage(settings: settings, decodingConfiguration: decodingConfiguration, queueCapacity: queueCapacity)
            stages[settings] = made
            running.withLock { $0 = Array(stages.values) }
            return made
        }
        stage.add(sink, keyframeInterval: keyframeInterval)
        return stage
    }

    /// `sink` leaves `stage`; the last one to leave ends it.
    func leave(_ sink: any CompressedVideoSink, stage: VideoCompressionStage) {
        let ended = stages.withLock { stages -> Bool in
            guard stage.remove(sink), stages[stage.settings] === stage else { return false }
            stages[stage.settings] = nil
            running.withLock { $0 = Array(stages.values) }
            return true
        }
        if ended { stage.finish() }
    }

    /// How many encoders run for this input now.
    var count: Int { stages.withLock { $0.count } }

    /// From the input's capture thread: a frame for every stage.
    func capture(_ sample: SampleBuffer) {
        guard case .video(let video) = sample else { return }
        for stage in running.withLock({ $0 }) { stage.capture(video) }
    }

    /// The input ended or stopped: each stage encodes what it has, hands
    /// out its last frames, and ends; the next sink gets a fresh one.
    func finish() {
        let ended = stages.withLock { stages in
            defer {
                stages = [:]
                running.withLock { $0 = [] }
            }
            return Array(stages.values)
        }
        for stage in ended { stage.finish() }
    }
}
