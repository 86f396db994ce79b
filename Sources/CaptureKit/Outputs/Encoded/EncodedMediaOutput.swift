import Dispatch
import Synchronization

/// A running session's cameras as H.264 and its microphones as Opus, for
/// receivers that send packets on (WebRTC viewers) rather than pictures.
///
/// A camera's video comes from its shared compression stage with the
/// settings a default recording of it uses (live H.264): while a recording
/// with those settings runs, it and every receiver share one encode; with
/// none, the stage runs for the receivers alone. A microphone is encoded to
/// Opus once, however many listen. Both run only while someone subscribes.
/// Capture never waits: samples reach the encoders through bounded queues.
package final class EncodedMediaOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: restated from CaptureOutput; the feeds and inputs are guarded by `state`.

    private struct State {
        var inputs: [CaptureInput] = []
        var running = false
        var cameras: [ObjectIdentifier: CameraPacketFeed] = [:]
        var microphones: [ObjectIdentifier: MicrophoneOpusFeed] = [:]
        var subscriptions: [ObjectIdentifier: EncodedMediaSubscription] = [:]
    }
    private let state = Mutex(State())

    package override init() { super.init() }

    /// `receiver` takes `camera`'s H.264 from its next keyframe on, and
    /// `microphone`'s Opus if one is named. Throws when the session does not
    /// run with them or an encoder cannot open.
    package func subscribe(_ receiver: any EncodedMediaReceiver, camera: CaptureInput,
                           microphone: CaptureInput?) throws(WriterError) -> EncodedMediaSubscription {
        let (running, known) = state.withLock { state in
            (state.running, state.inputs.contains { $0 === camera } && (microphone.map { mic in state.inputs.contains { $0 === mic } } ?? true))
        }
        guard running, known else { throw .invalidState("the session does not run with that camera or microphone") }
        guard camera.mediaType == .video, microphone.map({ $0.mediaType == .audio }) ?? true else {
            throw .invalidState("a camera and a microphone are needed")
        }
        // The feeds are found or made, and the receiver joins them, under one lock: a feed
        // that its last receiver leaves, or that ends, meanwhile is never joined.
        let video = try cameraFeed(for: camera)
        let subscription = EncodedMediaSubscription(camera: camera, microphone: microphone, receiver: receiver,
                                                    keyframe: { [weak video] in video?.requestKeyframe() },
                                                    leave: { [weak self] subscription in self?.unsubscribe(subscription) })
        let joined = state.withLock { state -> Bool in
            guard state.running, state.cameras[ObjectIdentifier(camera)] === video, video.add(receiver) else { return false }
            state.subscriptions[ObjectIdentifier(subscription)] = subscription
            return true
        }
        guard joined else {
            releaseIfUnused(video)
            throw .invalidState("the camera's feed ended as the viewer joined; ask again")
        }
        if let microphone {
            do throws(WriterError) {
                let audio = try microphoneFeed(for: microphone)
                let heard = state.withLock { state in
                    state.subscriptions[ObjectIdentifier(subscription)] != nil && state.microphones[ObjectIdentifier(microphone)] === audio
                        && audio.add(receiver)
                }
                if !heard { throw WriterError.invalidState("the microphone's feed ended as the viewer joined; ask again") }
            } catch {
                unsubscribe(subscription)
                throw error
            }
        }
        return subscription
    }

    /// The camera's feed, joined to its compression stage on first use.
    private func cameraFeed(for camera: CaptureInput) throws(WriterError) -> CameraPacketFeed {
        let key = ObjectIdentifier(camera)
        if let existing = state.withLock({ $0.cameras[key] }) { return existing }
        let made = CameraPacketFeed(camera: camera, failed: { [weak self] feed in self?.forget(feed) })
        try made.join()
        let (feed, spare) = state.withLock { state -> (CameraPacketFeed, CameraPacketFeed?) in
            if let existing = state.cameras[key] { return (existing, made) }
            state.cameras[key] = made
            return (made, nil)
        }
        spare?.leave()
        return feed
    }

    /// A feed whose encoder failed: forgotten, so that the next receiver gets a new one. It
    /// leaves the stage from another thread (this is the stage's, which leaving may join).
    private func forget(_ feed: CameraPacketFeed) {
        state.withLock { state in
            if state.cameras[ObjectIdentifier(feed.camera)] === feed { state.cameras[ObjectIdentifier(feed.camera)] = nil }
        }
        DispatchQueue.global().async { feed.leave() }
    }

    /// A feed made for a receiver that could not join it: left if no one else took it.
    private func releaseIfUnused(_ feed: CameraPacketFeed) {
        let unused = state.withLock { state -> Bool in
            guard state.cameras[ObjectIdentifier(feed.camera)] === feed, feed.isUnused else { return false }
            state.cameras[ObjectIdentifier(feed.camera)] = nil
            return true
        }
        if unused { feed.leave() }
    }

    private func microphoneFeed(for microphone: CaptureInput) throws(WriterError) -> MicrophoneOpusFeed {
        let key = ObjectIdentifier(microphone)
        if let existing = state.withLock({ $0.microphones[key] }) { return existing }
        let made = MicrophoneOpusFeed(microphone: microphone)
        try made.start()
        let (feed, spare) = state.withLock { state -> (MicrophoneOpusFeed, MicrophoneOpusFeed?) in
            if let existing = state.microphones[key] { return (existing, made) }
            state.microphones[key] = made
            return (made, nil)
        }
        spare?.stop()
        return feed
    }

    private func unsubscribe(_ subscription: EncodedMediaSubscription) {
        let (camera, microphone) = state.withLock { state -> (CameraPacketFeed?, MicrophoneOpusFeed?) in
            guard state.subscriptions.removeValue(forKey: ObjectIdentifier(subscription)) != nil else { return (nil, nil) }
            var camera: CameraPacketFeed?
            if let feed = state.cameras[ObjectIdentifier(subscription.camera)], feed.remove(subscription.receiver) {
                state.cameras[ObjectIdentifier(subscription.camera)] = nil
                camera = feed
            }
            var microphone: MicrophoneOpusFeed?
            if let mic = subscription.microphone, let feed = state.microphones[ObjectIdentifier(mic)], feed.remove(subscription.receiver) {
                state.microphones[ObjectIdentifier(mic)] = nil
                microphone = feed
            }
            return (camera, microphone)
        }
        camera?.leave()
        microphone?.stop()
    }

    /// Receivers now, over every camera.
    package var subscriptionCount: Int { state.withLock { $0.subscriptions.count } }

    /// Encoders running for receivers now: cameras and microphones.
    package var runningFeeds: (cameras: Int, microphones: Int) { state.withLock { ($0.cameras.count, $0.microphones.count) } }

    /// Audio sample frames dropped before Opus encoding, over the microphones encoding now.
    package var droppedAudioSampleFrames: Int { state.withLock { Array($0.microphones.values) }.reduce(0) { $0 + $1.droppedSampleFrames } }

    /// Ends the feeds for which `ends` holds: their receivers hear the end.
    private func endFeeds(cameras endsCamera: (CaptureInput) -> Bool, microphones endsMicrophone: (CaptureInput) -> Bool) {
        let (cameras, microphones) = state.withLock { state -> ([CameraPacketFeed], [MicrophoneOpusFeed]) in
            let cameras = state.cameras.values.filter { endsCamera($0.camera) }
            let microphones = state.microphones.values.filter { endsMicrophone($0.microphone) }
            for feed in cameras { state.cameras[ObjectIdentifier(feed.camera)] = nil }
            for feed in microphones { state.microphones[ObjectIdentifier(feed.microphone)] = nil }
            return (cameras, microphones)
        }
        for feed in cameras {
            feed.end()
            feed.leave()
        }
        // A microphone that ends takes its sound away; the viewers' video goes on.
        for feed in microphones { feed.stop() }
    }

    // MARK: CaptureOutput

    package override func sessionWillStartRunning(inputs: [CaptureInput]) throws(CaptureError) {
        state.withLock { state in
            state.inputs = inputs
            state.running = true
        }
    }

    package override func sessionDidChangeInputs(_ inputs: [CaptureInput]) {
        state.withLock { $0.inputs = inputs }
        let present = Set(inputs.map(ObjectIdentifier.init))
        endFeeds(cameras: { !present.contains(ObjectIdentifier($0)) }, microphones: { !present.contains(ObjectIdentifier($0)) })
    }

    package override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        // Video reaches the cameras' feeds through their compression stages; only audio comes here.
        guard case .audio(let audio) = sample else { return }
        let feed = state.withLock { $0.microphones.isEmpty ? nil : $0.microphones[ObjectIdentifier(input)] }
        guard let feed, isConnectionEnabled(for: input) else { return }
        feed.capture(audio)
    }

    package override func input(_ input: CaptureInput, didEnd end: CaptureEnd) {
        endFeeds(cameras: { $0 === input }, microphones: { $0 === input })
    }

    package override func sessionDidStopRunning() {
        state.withLock { $0.running = false }
        endFeeds(cameras: { _ in true }, microphones: { _ in true })
    }
}
