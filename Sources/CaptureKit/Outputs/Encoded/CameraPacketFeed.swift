/// One camera's H.264 for an `EncodedMediaOutput`'s receivers: a sink of the
/// camera's compression stage with the settings a default recording of it
/// encodes with, so that a recording and its viewers share one encoder. Each
/// receiver starts at a keyframe, asked of the encoder when it joins.
final class CameraPacketFeed: CompressedVideoSink, Sendable {
    private struct Member {
        let receiver: any EncodedMediaReceiver
        var started = false
    }
    private struct State {
        var members: [Member] = []
        var keyframeWanted = true
        var ended = false
    }
    private let state = Locked(State())
    let camera: CaptureInput
    /// The stage it joined; nil until `join()`.
    private let stage = Locked<VideoCompressionStage?>(nil)

    /// Called when the encoder fails, so that the output forgets the feed (the next receiver gets a new one).
    private let failed: @Sendable (CameraPacketFeed) -> Void

    init(camera: CaptureInput, failed: @escaping @Sendable (CameraPacketFeed) -> Void = { _ in }) {
        self.camera = camera
        self.failed = failed
    }

    /// Joins the camera's compression stage (opening the encoder if no
    /// recording or stream has it open). Throws what the encoder refuses.
    func join() throws(WriterError) {
        guard let format = camera.videoFormat else { throw .invalidState("the camera has no video format") }
        let settings: VideoOutputSettings
        do throws(RecordingError) {
            guard case .video(let video) = try RecordingSettings().outputSettings(forVideo: format, fileType: .mp4) else {
                throw .unsupported("no video settings")
            }
            settings = video
        } catch {
            throw .invalidSettings(error.description)
        }
        guard VideoCompressor.canShare(settings), settings.codec == .h264 else {
            throw .invalidSettings("the camera's default recording settings are not live H.264")
        }
        let joined = try camera.compression.join(self, settings: settings, keyframeInterval: nil,
                                                 decodingConfiguration: format.codecConfiguration, queueCapacity: 8)
        stage.withLock { $0 = joined }
    }

    /// Leaves the stage (its last sink ends it).
    func leave() {
        guard let joined = stage.withLock({ stage in defer { stage = nil }; return stage }) else { return }
        camera.compression.leave(self, stage: joined)
    }

    /// Adds `receiver`; false when the feed has ended (its camera or encoder did).
    func add(_ receiver: any EncodedMediaReceiver) -> Bool {
        state.withLock { state in
            guard !state.ended else { return false }
            state.members.append(Member(receiver: receiver))
            state.keyframeWanted = true
            return true
        }
    }

    /// No receiver has joined it, or every one has left.
    var isUnused: Bool { state.withLock { $0.members.isEmpty } }

    /// Removes `receiver`; true when none is left.
    func remove(_ receiver: any EncodedMediaReceiver) -> Bool {
        state.withLock { state in
            state.members.removeAll { $0.receiver === receiver }
            return state.members.isEmpty
        }
    }

    func requestKeyframe() { state.withLock { $0.keyframeWanted = true } }

    /// The camera or session ended: every receiver hears it once.
    func end() {
        let members = state.withLock { state -> [Member] in
            guard !state.ended else { return [] }
            state.ended = true
            return state.members
        }
        for member in members { member.receiver.encodedMediaDidEnd() }
    }

    // MARK: CompressedVideoSink (the stage's thread)

    func compressionStage(_ stage: VideoCompressionStage, wantsKeyframeAt time: MediaTime) -> Bool {
        state.withLock { state in
            defer { state.keyframeWanted = false }
            return state.keyframeWanted
        }
    }

    func compressionStage(_ stage: VideoCompressionStage, didEncode sample: VideoSampleBuffer) {
        let receivers = state.withLock { state -> [any EncodedMediaReceiver] in
            var taking: [any EncodedMediaReceiver] = []
            for index in state.members.indices {
                if !state.members[index].started {
                    guard sample.isKeyframe else { continue }
                    state.members[index].started = true
                }
                taking.append(state.members[index].receiver)
            }
            return taking
        }
        let time = sample.presentationTime.nanoseconds.value
        for receiver in receivers { receiver.receiveVideo(sample.bytes, captureTime: time, isKeyframe: sample.isKeyframe) }
    }

    func compressionStage(_ stage: VideoCompressionStage, didFail error: WriterError) {
        end()
        failed(self)
    }
}
