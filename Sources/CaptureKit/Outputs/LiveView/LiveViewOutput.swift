import Synchronization

/// Live views of a running session's cameras as JPEG pictures, for a
/// person checking where a camera points and whether it is in focus: the
/// part of AVCaptureVideoPreviewLayer a program without a screen needs.
///
/// A view (`view(of:settings:)`) is a camera at a size, rate and quality;
/// viewers asking the same share it, and its pictures are made once on a
/// thread of its own, only while someone watches. A camera that delivers
/// JPEG (MJPEG) frames at the view's size is passed through without
/// re-encoding. Capture never waits for a view, and a view never waits for
/// a viewer: a busy view skips frames, a slow viewer misses pictures (both
/// counted in `statistics`). `snapshot(of:settings:timeout:)` answers one
/// picture: the newest a running view made, or the camera's next frame.
package final class LiveViewOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: restated from CaptureOutput; the views, inputs and limit are guarded by `state`.

    private struct State {
        var inputs: [CaptureInput] = []
        var running = false
        var views: [LiveView.Key: LiveView] = [:]
        var maximumViewers = 64
        /// What the views that ended did, per camera (by its place among the inputs).
        var ended: [Int: LiveViewTotals] = [:]

        /// Forgets `view`, keeping what it did.
        mutating func remove(_ view: LiveView) {
            views[view.key] = nil
            let done = view.statistics(cameraName: "", devicePath: "")
            ended[view.cameraIndex, default: LiveViewTotals(cameraIndex: view.cameraIndex)].add(done)
        }
    }
    private let state = Mutex(State())

    package override init() { super.init() }

    package override var connectedMediaTypes: Set<MediaType> { [.video] }

    /// Viewers at once, over every view, at most (default 64); more are
    /// refused with `LiveViewError.tooManyViewers`. Snapshots do not count.
    package var maximumViewerCount: Int {
        get { state.withLock { $0.maximumViewers } }
        set { state.withLock { $0.maximumViewers = max(0, newValue) } }
    }

    /// Viewers watching now, over every view.
    package var viewerCount: Int {
        state.withLock { Array($0.views.values) }.reduce(0) { $0 + $1.viewerCount }
    }

    /// A new viewer of `camera` (one of the running session's inputs) at
    /// `settings`: it shares the view of every viewer asking the same.
    /// `close()` it when done.
    package func view(of camera: CaptureInput, settings: LiveViewSettings = LiveViewSettings()) throws(LiveViewError) -> LiveViewer {
        try viewer(of: camera, settings: settings, counted: true)
    }

    /// One picture of `camera`: the newest of a running view at the same
    /// size and quality if it is less than a second old, else the picture
    /// of the camera's next frame (waiting up to `timeout` for it). Unlike a
    /// photo, it takes no still capture: it is what a viewer would see.
    package func snapshot(of camera: CaptureInput, settings: LiveViewSettings = LiveViewSettings(),
                         timeout: Duration = .seconds(5)) async throws(LiveViewError) -> LiveViewFrame {
        var still = settings
        still.frameRate = nil
        let key = try key(for: camera, settings: still)
        let recent = MonotonicClock.now() - MediaTime(value: 1, timescale: 1)
        let running = state.withLock { state in
            state.views.values.filter { $0.key.camera == key.camera && $0.width == key.width && $0.height == key.height && $0.key.quality == key.quality }
        }
        for view in running {
            if let picture = view.latest(since: recent) { return picture }
        }
        let viewer = try viewer(of: camera, settings: still, counted: false)
        defer { viewer.close() }
        let timedOut = Atomic<Bool>(false)
        let timer = Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            timedOut.store(true, ordering: .releasing)
            viewer.finish()
        }
        defer { timer.cancel() }
        guard let picture = await viewer.next() else {
            throw timedOut.load(ordering: .acquiring) ? .timedOut : .notRunning
        }
        return picture
    }

    /// Every view being watched now, and what it has done.
    package var statistics: [LiveViewStatistics] {
        let views = state.withLock { Array($0.views.values) }
        return views.map { view in
            view.statistics(cameraName: view.camera.source.localizedName, devicePath: view.camera.source.path)
        }.sorted { ($0.cameraIndex, $0.width, $0.frameRate ?? .infinity) < ($1.cameraIndex, $1.width, $1.frameRate ?? .infinity) }
    }

    /// What the views of each camera of the session did since the output
    /// began, those that ended included, in the inputs' order (cameras only).
    package var totals: [LiveViewTotals] {
        let (inputs, views, ended) = state.withLock { ($0.inputs, Array($0.views.values), $0.ended) }
        var totals = ended
        for view in views {
            totals[view.cameraIndex, default: LiveViewTotals(cameraIndex: view.cameraIndex)]
                .add(view.statistics(cameraName: "", devicePath: ""))
        }
        for (index, input) in inputs.enumerated() where input.mediaType == .video && totals[index] == nil {
            totals[index] = LiveViewTotals(cameraIndex: index)
        }
        return totals.values.sorted { $0.cameraIndex < $1.cameraIndex }
    }

    // MARK: Views

    private func viewer(of camera: CaptureInput, settings: LiveViewSettings, counted: Bool) throws(LiveViewError) -> LiveViewer {
        let key = try key(for: camera, settings: settings)
        // A view whose last viewer left just now may stop before this viewer joins: then a new one is made.
        for _ in 0..<3 {
            let view = try state.withLock { state throws(LiveViewError) -> LiveView in
                guard state.running else { throw .notRunning }
                guard let index = state.inputs.firstIndex(where: { $0 === camera }) else { throw .notACamera }
                if counted {
                    let watching = state.views.values.reduce(0) { $0 + $1.viewerCount }
                    if watching >= state.maximumViewers { throw .tooManyViewers(state.maximumViewers) }
                }
                if let view = state.views[key] { return view }
                let view = LiveView(key: key, camera: camera, cameraIndex: index) { [weak self] view in self?.forget(view) }
                do {
                    try view.start()
                } catch {
                    throw .encodingFailed("\(error)")
                }
                state.views[key] = view
                return view
            }
            if let viewer = view.addViewer() { return viewer }
        }
        throw .notRunning
    }

    /// The last viewer left: the view stops (and a new viewer makes a new one).
    private func forget(_ view: LiveView) {
        let forgotten = state.withLock { state -> Bool in
            // A viewer may have joined meanwhile; then the view goes on.
            guard state.views[view.key] === view, view.viewerCount == 0 else { return false }
            state.remove(view)
            return true
        }
        if forgotten { view.stop() }
    }

    /// The view `settings` ask of `camera`, checked.
    private func key(for camera: CaptureInput, settings: LiveViewSettings) throws(LiveViewError) -> LiveView.Key {
        guard camera.mediaType == .video, let format = camera.videoFormat, format.width > 0, format.height > 0 else {
            throw .notACamera
        }
        let maximum = LiveViewSettings.maximumSide
        guard (1...100).contains(settings.quality) else {
            throw .invalidSettings("quality \(settings.quality) is out of range; use 1 to 100")
        }
        for (name, side) in [("width", settings.width), ("height", settings.height)] {
            if let side, !(2...maximum).contains(side) {
                throw .invalidSettings("\(name) \(side) is out of range; use 2 to \(maximum)")
            }
        }
        // One side given: the other keeps the camera's aspect ratio, rounded to an even number.
        func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }
        let width = settings.width ?? settings.height.map { even(Double($0) * Double(format.width) / Double(format.height)) } ?? format.width
        let height = settings.height ?? settings.width.map { even(Double($0) * Double(format.height) / Double(format.width)) } ?? format.height
        guard width <= maximum, height <= maximum else {
            throw .invalidSettings("a \(width)x\(height) view is larger than \(maximum) pixels on a side")
        }
        var frameRate = settings.frameRate
        if let rate = frameRate {
            guard rate.isFinite, rate >= LiveViewSettings.minimumFrameRate, rate <= 1000 else {
                throw .invalidSettings("a rate of \(rate) frames per second is out of range; use 1/60 to 1000")
            }
            // As fast as the camera, or faster: every frame.
            if let duration = format.frameDuration, duration.seconds > 0, rate * duration.seconds >= 0.999 { frameRate = nil }
        }
        return LiveView.Key(camera: ObjectIdentifier(camera), width: width, height: height, frameRate: frameRate, quality: settings.quality)
    }

    /// Stops the views of cameras for which `ends` holds.
    private func stopViews(where ends: (LiveView) -> Bool) {
        let stopped = state.withLock { state -> [LiveView] in
            let ending = state.views.values.filter(ends)
            for view in ending { state.remove(view) }
            return ending
        }
        for view in stopped { view.stop() }
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
        stopViews { !present.contains($0.key.camera) }
    }

    package override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard case .video(let video) = sample else { return }
        let camera = ObjectIdentifier(input)
        // Every frame of every camera comes here: with no one watching, nothing is made (not even an empty array).
        let views = state.withLock { state in state.views.isEmpty ? [] : state.views.values.filter { $0.key.camera == camera } }
        guard !views.isEmpty, isConnectionEnabled(for: input) else { return }
        for view in views { view.offer(video) }
    }

    /// A camera that ended (lost, end of its file) ends its views: their viewers' `next()` answers nil.
    package override func input(_ input: CaptureInput, didEnd end: CaptureEnd) {
        let camera = ObjectIdentifier(input)
        stopViews { $0.key.camera == camera }
    }

    package override func sessionDidStopRunning() {
        state.withLock { $0.running = false }
        stopViews { _ in true }
    }
}
