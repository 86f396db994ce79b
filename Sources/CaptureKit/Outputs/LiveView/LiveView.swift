import Synchronization

/// One view of a camera: its frames at one size, rate and quality, made
/// into JPEG pictures on a thread of its own, once, for every viewer. It
/// exists while someone watches: the output makes it for the first viewer
/// and stops it when the last one leaves.
final class LiveView: Sendable {
    struct Key: Hashable {
        let camera: ObjectIdentifier
        let width: Int
        let height: Int
        let frameRate: Double?
        let quality: Int
    }

    let key: Key
    let camera: CaptureInput
    let cameraIndex: Int
    var width: Int { key.width }
    var height: Int { key.height }
    var frameRate: Double? { key.frameRate }
    /// The frames waiting for the view's thread: capture never waits for
    /// the encoder; a frame that finds the queue full is skipped.
    private let queue = BoundedQueue<VideoSampleBuffer>(capacity: 2)

    /// Which frames the capture side hands on (on the camera's capture thread).
    private struct Selection {
        var schedule: LiveViewSchedule
        /// Inter-coded frames were skipped: the decoder starts again at a keyframe.
        var lostInterFrames = false
    }
    private let selection: Mutex<Selection>

    private struct State {
        var viewers: [ObjectIdentifier: LiveViewer] = [:]
        var latest: LiveViewFrame?
        var made = 0
        var delivered = 0
        var bytes = 0
        var dropped = 0
        var failures = 0
        var lastFailure: String?
        var passesThrough = false
        var stopped = false
    }
    private let state = Mutex(State())
    /// Told when the last viewer leaves (the output forgets the view).
    private let onEmpty: @Sendable (LiveView) -> Void

    init(key: Key, camera: CaptureInput, cameraIndex: Int, onEmpty: @escaping @Sendable (LiveView) -> Void) {
        self.key = key
        self.camera = camera
        self.cameraIndex = cameraIndex
        self.onEmpty = onEmpty
        selection = Mutex(Selection(schedule: LiveViewSchedule(frameRate: key.frameRate)))
    }

    /// Starts the view's thread.
    func start() throws(CaptureError) {
        let maker = LiveViewPictureMaker(width: key.width, height: key.height, frameRate: key.frameRate, quality: key.quality)
        do {
            // Not joined: it ends by itself once the queue is closed, and a
            // viewer leaving (in an async task) must not wait for it.
            _ = try CaptureThread.start(name: "live-view") { [self] in run(maker) }
        } catch {
            throw .io("live view", error)
        }
    }

    // MARK: Capture side

    /// A frame of the camera, on its capture thread: queued for the view's
    /// thread if the view shows it.
    func offer(_ sample: VideoSampleBuffer) {
        let everyFrame = LiveViewPictureMaker.decodesEveryFrame(sample.layout)
        let take = selection.withLock { selection -> Bool in
            if everyFrame {
                // After a lost frame the decoder needs a keyframe; until then nothing is worth queueing.
                if selection.lostInterFrames && !sample.isKeyframe { return false }
                return true
            }
            return selection.schedule.admits(sample.presentationTime)
        }
        guard take else { return }
        let queued = queue.put(sample)
        if everyFrame {
            selection.withLock { selection in
                if !queued { selection.lostInterFrames = true } else if sample.isKeyframe { selection.lostInterFrames = false }
            }
        }
    }

    // MARK: The view's thread

    private func run(_ maker: LiveViewPictureMaker) {
        var restartsDecoding = false
        while let sample = queue.take() {
            // Frames left in the queue of a stopped view are for nobody.
            if state.withLock({ $0.stopped }) { continue }
            if LiveViewPictureMaker.decodesEveryFrame(sample.layout) {
                // A keyframe after frames were lost: start decoding afresh from it.
                if sample.isKeyframe && restartsDecoding { maker.restartDecoding() }
                restartsDecoding = selection.withLock { $0.lostInterFrames }
            }
            let pictures: [LiveViewFrame]
            do throws(WriterError) {
                pictures = try maker.pictures(of: sample)
            } catch {
                state.withLock { state in
                    state.failures += 1
                    state.lastFailure = error.description
                }
                continue
            }
            for picture in pictures { hand(picture, passedThrough: maker.passedThrough) }
        }
    }

    /// Gives a picture to every viewer (each counts what became of it).
    private func hand(_ picture: LiveViewFrame, passedThrough: Bool) {
        let viewers = state.withLock { state -> [LiveViewer] in
            state.latest = picture
            state.made += 1
            state.passesThrough = passedThrough
            return Array(state.viewers.values)
        }
        for viewer in viewers { viewer.offer(picture) }
    }

    /// A picture handed to a viewer (called under the viewer's lock: the view's is taken after it).
    func countDelivered(_ picture: LiveViewFrame) {
        state.withLock { state in
            state.delivered += 1
            state.bytes += picture.jpeg.count
        }
    }

    /// A picture a viewer missed (called under the viewer's lock).
    func countDropped() {
        state.withLock { $0.dropped += 1 }
    }

    // MARK: Viewers

    /// Adds a viewer, who at once has the newest picture if the view made one; nil once the view has stopped.
    func addViewer() -> LiveViewer? {
        let viewer = LiveViewer(view: self)
        let latest = state.withLock { state -> LiveViewFrame?? in
            guard !state.stopped else { return nil }
            state.viewers[ObjectIdentifier(viewer)] = viewer
            return .some(state.latest)
        }
        guard let latest else { return nil }
        // Kept for the new viewer (counted when it is taken).
        if let latest { viewer.offer(latest) }
        return viewer
    }

    func remove(_ viewer: LiveViewer) {
        let empty = state.withLock { state -> Bool in
            guard state.viewers.removeValue(forKey: ObjectIdentifier(viewer)) != nil else { return false }
            return state.viewers.isEmpty
        }
        if empty { onEmpty(self) }
    }

    var viewerCount: Int { state.withLock { $0.viewers.count } }

    /// The newest picture, if it was made from a frame captured at or after `time`.
    func latest(since time: MediaTime) -> LiveViewFrame? {
        state.withLock { state in
            guard let latest = state.latest, !(latest.captureTime < time) else { return nil }
            return latest
        }
    }

    /// Ends the view: its thread ends once the frame it works on is done, and every viewer's `next()` answers nil.
    func stop() {
        let viewers = state.withLock { state -> [LiveViewer] in
            state.stopped = true
            defer { state.viewers = [:] }
            return Array(state.viewers.values)
        }
        queue.close()
        for viewer in viewers { viewer.finish() }
    }

    func statistics(cameraName: String, devicePath: String) -> LiveViewStatistics {
        state.withLock { state in
            LiveViewStatistics(cameraIndex: cameraIndex, cameraName: cameraName, devicePath: devicePath, width: key.width,
                               height: key.height, frameRate: key.frameRate, quality: key.quality, passesThrough: state.passesThrough,
                               viewers: state.viewers.count, framesMade: state.made, framesSkipped: queue.refusedCount,
                               framesDelivered: state.delivered, bytesDelivered: state.bytes, framesDropped: state.dropped)
        }
    }
}
