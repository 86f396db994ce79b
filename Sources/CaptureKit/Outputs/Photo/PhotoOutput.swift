import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Takes still photos from a session's camera, like AVCapturePhotoOutput:
/// `capturePhoto(with:delegate:)` queues a request; the output takes the next
/// good frame once the camera has warmed up, and makes the photo from it on
/// a processing thread of its own: JPEG (a camera's MJPEG frame written as it
/// came, without decoding), PNG, or the raw frame with a JSON description.
///
/// From an H.264 or HEVC camera, a frame can become a photo only from the
/// first keyframe (IDR) on: frames before it cannot be decoded and are
/// skipped. The output keeps copies of the frames since the latest keyframe
/// (see `PhotoFrameRun`) and decodes the chosen frame from there; a raw photo
/// is the chosen access unit as it came.
///
/// The photos come from the session's first camera whose connection to the
/// output is enabled (`connections`).
///
/// Requests are served one at a time, in order; each takes a later frame than
/// the one before. On the capture thread the output only counts frames and
/// hands one over when a request waits for it, so capture never waits on an
/// encoder. Frames with the driver's error flag, or empty ones, never become
/// a photo (the V4L2 source skips flagged frames; empty ones are skipped here).
///
/// With `isLivePhotoCaptureEnabled`, copies of the latest frames are kept in
/// a ring, and a request with a `livePhotoMovieFilePath` also gets a movie
/// of `livePhotoMovieDuration` centred on the photo.
///
/// Here: requests, the session's side and the processing loop; making the
/// photo and its live movie in `PhotoOutput+Making.swift`.
public final class PhotoOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked (restated from CaptureOutput, which cannot be checked): requests and frames are guarded by
    // `capture` and `lock`; the configuration properties are set before the session starts; the processing
    // state (`pending`, `lastTaken`, `converter`) is used on the processing thread alone.
    // MARK: Configuration (set before the session starts)

    /// Frames that never become photos at the start of capture.
    public var warmup: PhotoWarmup = .none
    /// The light `flashMode` on and auto use; nil: the camera has none.
    public var flashDevice: (any PhotoFlashDevice)?
    /// With flash auto, the flash fires when a frame's mean luma is below this (0…1).
    public var darkLumaThreshold = 0.25
    /// Keep a ring of recent frames, so that requests can ask for a live photo movie.
    public var isLivePhotoCaptureEnabled = false
    /// How long a live photo movie is: half before the photo, half after.
    public var livePhotoMovieDuration = MediaTime(value: 3, timescale: 1)
    /// At most this many frames are kept in the ring.
    public var livePhotoMaximumFrames = 400
    /// At most this many bytes of an H.264/HEVC camera's frames are kept to
    /// decode a photo from its keyframe; a longer run between keyframes makes
    /// its frames wait for the next keyframe.
    public var keyframeRunByteLimit = 64 << 20

    // MARK: State

    struct Request {
        let settings: PhotoSettings
        let delegate: any PhotoCaptureDelegate
    }

    enum Message {
        case request(Request)
        case frame(PhotoFrame)
        case ended(String)
    }

    /// Shared with the capture thread.
    struct CaptureState {
        var videoInput: CaptureInput?
        var goodFrames = 0
        var emptyFrames = 0
        var firstTime: Int64?
        /// When the first frame that could become a photo came (for H.264,
        /// the first keyframe): a live photo's movie starts no earlier.
        var firstEligible: Int64?
        /// A frame is wanted: the first good warm frame that meets this.
        var wanted: Want?
        var ring = LivePhotoRing(isInterCoded: false)
        var run = PhotoFrameRun(layout: .raw(.gray8, bytesPerRow: nil), byteLimit: 0)
    }

    /// Which frame a waiting request takes.
    struct Want {
        /// Captured at or after this time (nanoseconds), when set.
        var notBefore: Int64?
        /// Captured at least this long after the first frame that could be a photo (nanoseconds).
        var sinceFirst: Int64 = 0
    }

    let capture = Locked(CaptureState())
    let lock = Lock()
    private var usedIDs = Set<Int64>()
    private var waitingForStart: [Request] = []
    private(set) var queue: BoundedQueue<Message>?
    private var thread: CaptureThread?
    var endReason: String?
    /// Told once when capture ends (the camera ended, or the session stopped), with why; by token.
    /// (See `PhotoOutput+CaptureEnd.swift`.)
    var endObservers: [Int: @Sendable (String) -> Void] = [:]
    var nextObserverToken = 0
    private var format: CaptureVideoFormat?
    private var warmupSetting = PhotoWarmup.none
    var liveEnabled = false
    /// Whether capture keeps copies of frames for decoding (H.264, HEVC).
    private var keepsFrameRuns = false

    // Processing thread only.
    var pending: [Request] = []
    /// When the last frame taken (for a photo or metering) was captured.
    private var lastTaken: Int64?
    let converter = PhotoFrameConverter()

    public override init() { super.init() }

    /// The camera's format while the session runs.
    public var videoFormat: CaptureVideoFormat? { lock.withLock { format } }
    /// Good frames the camera delivered so far, and empty ones skipped.
    public var framesSeen: (good: Int, empty: Int) { capture.withLock { ($0.goodFrames, $0.emptyFrames) } }

    // MARK: Requests

    /// Queues a photo request. Throws at once for settings used before
    /// (`settingsReused`), a quality outside 1…100, or flash on with no
    /// flash device; the rest of what can go wrong reaches the delegate
    /// through `didFinishCapture(error:)`, after the progress events.
    public func capturePhoto(with settings: PhotoSettings, delegate: any PhotoCaptureDelegate) throws(PhotoError) {
        try capturePhoto(with: settings, delegate: delegate, waiting: .forAnyStart)
    }

    /// As `capturePhoto(with:delegate:)`, waiting for a start as `waiting`
    /// says: a series asks its first photos so, and the later ones `never`.
    func capturePhoto(with settings: PhotoSettings, delegate: any PhotoCaptureDelegate, waiting: StartWait) throws(PhotoError) {
        if let quality = settings.quality, !(1...100).contains(quality) {
            throw .unsupported("JPEG quality \(quality) is out of range; use 1 to 100")
        }
        if settings.flashMode == .on && flashDevice == nil {
            throw .flash("the camera has no flash or torch; use flash off or auto")
        }
        let request = Request(settings: settings, delegate: delegate)
        let queue = try lock.withLock { () throws(PhotoError) -> BoundedQueue<Message>? in
            guard usedIDs.insert(settings.uniqueID).inserted else { throw .settingsReused(uniqueID: settings.uniqueID) }
            switch waiting {
            case .forAnyStart: break
            case .forFirstStart:
                if let endReason { throw .captureEnded(endReason) }
            case .never:
                if self.queue == nil || endReason != nil { throw .captureEnded(endReason ?? "capture is not running") }
            }
            if let queue = self.queue { return queue }
            waitingForStart.append(request)
            return nil
        }
        if let queue, !queue.put(.request(request)) {
            // The queue is closed (the session stopped) or full: fail the request here.
            let reason = lock.withLock { endReason } ?? "too many photo requests are waiting"
            let resolved = Self.unresolved(settings, format: videoFormat)
            delegate.photoOutput(self, willBeginCaptureFor: resolved)
            delegate.photoOutput(self, willCapturePhotoFor: resolved)
            delegate.photoOutput(self, didCapturePhotoFor: resolved, timestamp: .invalid)
            delegate.photoOutput(self, didFinishCaptureFor: resolved, error: .captureEnded(reason))
        }
    }

    /// The settings `settings` resolve to for a camera delivering `format`,
    /// or why they cannot be met: a size for a raw photo, a camera whose
    /// frames cannot be read, a live photo movie that is not .mov or .mp4.
    public static func resolve(_ settings: PhotoSettings, for format: CaptureVideoFormat, flashFired: Bool = false) throws(PhotoError) -> ResolvedPhotoSettings {
        let frameSize = PhotoDimensions(width: format.width, height: format.height)
        if let size = settings.size {
            guard (1...32768).contains(size.width), (1...32768).contains(size.height) else {
                throw .unsupported("\(size) is not a photo size")
            }
            if settings.format == .raw && size != frameSize {
                throw .unsupported("a raw photo keeps the camera's frame size (\(frameSize)); ask the camera for \(size) instead")
            }
        }
        if let quality = settings.quality, !(1...100).contains(quality) {
            throw .unsupported("JPEG quality \(quality) is out of range; use 1 to 100")
        }
        let dimensions = settings.size ?? frameSize
        var passthrough = settings.format == .raw
        switch format.layout {
        case .compressed(let codec):
            if settings.format == .jpeg, codec == "mjpeg", settings.quality == nil, dimensions == frameSize { passthrough = true }
            if settings.format != .raw && codec != "mjpeg" && AccessUnit.Codec(codecName: codec) == nil {
                throw .unsupported("photos are made from MJPEG, H.264, HEVC or uncompressed frames; this camera delivers \(codec) (\(format.fourcc)); ask it for another pixel format, or take a raw photo")
            }
        case .raw(let pixelFormat, _):
            if settings.format != .raw && !pixelFormat.isConvertible(asInput: true) {
                throw .unsupported("frames in \(pixelFormat) (\(format.fourcc)) cannot be converted to an image; take a raw photo")
            }
        }
        if let movie = settings.livePhotoMovieFilePath, ![FileType.quickTimeMovie, .mp4].contains(FileType(path: movie)) {
            throw .unsupported("\(movie): a live photo movie is written as .mov or .mp4")
        }
        return ResolvedPhotoSettings(uniqueID: settings.uniqueID, format: settings.format, dimensions: dimensions, flashFired: flashFired,
                                     flashMode: settings.flashMode, quality: settings.format == .jpeg && !passthrough ? (settings.quality ?? 95) : nil,
                                     isPassthrough: passthrough, sourceFourCC: format.fourcc, outputPath: settings.outputPath,
                                     livePhotoMovieFilePath: settings.livePhotoMovieFilePath)
    }

    /// Where a raw photo's description goes: the photo's path with `.json` added.
    public static func rawSidecarPath(for path: String) -> String { path + ".json" }

    /// Resolved settings for a request that failed before it could be resolved.
    private static func unresolved(_ settings: PhotoSettings, format: CaptureVideoFormat?) -> ResolvedPhotoSettings {
        if let format, let resolved = try? resolve(settings, for: format) { return resolved }
        let size = settings.size ?? format.map { PhotoDimensions(width: $0.width, height: $0.height) } ?? PhotoDimensions(width: 0, height: 0)
        return ResolvedPhotoSettings(uniqueID: settings.uniqueID, format: settings.format, dimensions: size, flashFired: false,
                                     flashMode: settings.flashMode, quality: settings.quality, isPassthrough: false,
                                     sourceFourCC: format?.fourcc ?? "", outputPath: settings.outputPath,
                                     livePhotoMovieFilePath: settings.livePhotoMovieFilePath)
    }

    // MARK: Session

    public override func sessionWillStartRunning(inputs: [CaptureInput]) throws(CaptureError) {
        // The first camera whose connection is enabled: a session with several
        // cameras gives each its own photo output by disabling the others' connections.
        guard let video = inputs.first(where: { $0.mediaType == .video && isConnectionEnabled(for: $0) }),
              let format = video.videoFormat else {
            throw .source("photo output", reason: "a photo output needs a camera among the session's inputs")
        }
        let queue = BoundedQueue<Message>(capacity: 1024)
        let waiting = lock.withLock { () -> [Request] in
            self.format = format
            self.queue = queue
            endReason = nil
            warmupSetting = warmup
            liveEnabled = isLivePhotoCaptureEnabled
            defer { waitingForStart = [] }
            return waitingForStart
        }
        let run = PhotoFrameRun(layout: format.layout, byteLimit: keyframeRunByteLimit)
        keepsFrameRuns = run.keepsFrames
        let lead = waiting.first.map { movieLead(for: $0.settings) }
        capture.withLock { state in
            state = CaptureState()
            state.videoInput = video
            state.run = run
            state.ring = LivePhotoRing(isInterCoded: run.isInterCoded)
            // A request made before the start takes the very first good frame
            // (once warm) that it can take, even if this thread is not yet
            // waiting for it: for a live photo, once the movie's first half is there.
            if let lead { state.wanted = Want(sinceFirst: lead) }
        }
        for request in waiting { queue.put(.request(request)) }
        lastTaken = nil
        do {
            thread = try CaptureThread.start(name: "photo") { [self] in processingLoop(queue) }
        } catch {
            throw .io("photo output", error)
        }
    }

    public override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard case .video(let video) = sample else { return }
        let (warmup, live, keeps) = (warmupSetting, liveEnabled, keepsFrameRuns)
        let stamp = video.presentationTime.converted(toTimescale: MonotonicClock.timescale).value
        // One copy serves the live ring and the keyframe run: capture buffers go back to the device.
        let copy: VideoSampleBuffer? = (live || keeps) && video.bytes.count > 0
            ? VideoSampleBuffer(storage: SampleStorage(copying: video.bytes), layout: video.layout, width: video.width, height: video.height,
                                presentationTime: video.presentationTime, duration: video.duration, sequence: video.sequence,
                                isKeyframe: video.isKeyframe, decodeTime: video.decodeTime)
            : nil
        let keep = livePhotoMovieDuration.converted(toTimescale: MonotonicClock.timescale).value + 1_000_000_000
        let maximumFrames = livePhotoMaximumFrames
        let chosen = capture.withLock { state -> PhotoFrame? in
            guard state.videoInput === input else { return nil }
            if live, let copy { state.ring.append(copy, keep: keep, maximumFrames: maximumFrames) }
            let eligible = state.run.take(copy ?? video)
            guard video.bytes.count > 0 else {
                state.emptyFrames += 1
                return nil
            }
            state.goodFrames += 1
            if state.firstTime == nil { state.firstTime = stamp }
            let warm: Bool
            switch warmup {
            case .frames(let count): warm = state.goodFrames > count
            case .duration(let time): warm = stamp - state.firstTime! >= time.converted(toTimescale: MonotonicClock.timescale).value
            }
            if eligible, state.firstEligible == nil { state.firstEligible = stamp }
            guard warm, eligible, let wanted = state.wanted, let firstEligible = state.firstEligible else { return nil }
            if let notBefore = wanted.notBefore, stamp < notBefore { return nil }
            if stamp - firstEligible < wanted.sinceFirst { return nil }
            state.wanted = nil
            return state.run.photoFrame(for: video)
        }
        guard let chosen, let queue = lock.withLock({ self.queue }) else { return }
        if !queue.put(.frame(chosen)) {
            capture.withLock { $0.wanted = Want() }
        }
    }

    public override func input(_ input: CaptureInput, didEnd end: CaptureEnd) {
        guard capture.withLock({ $0.videoInput === input }) else { return }
        let reason: String
        switch end {
        case .stopped: reason = "capture stopped before the photo was taken"
        case .endOfInput: reason = "\(input.source.path): the input ended before the photo was taken"
        case .deviceLost(let device): reason = "\(device): the device went away before the photo was taken"
        case .failed(let error): reason = error.description
        }
        lock.withLock { () -> BoundedQueue<Message>? in
            if endReason == nil { endReason = reason }
            return queue
        }?.put(.ended(reason))
        tellEndObservers()
    }

    /// Requests still waiting fail; the processing thread ends.
    public override func sessionDidStopRunning() {
        let (queue, thread) = lock.withLock { () -> (BoundedQueue<Message>?, CaptureThread?) in
            if endReason == nil { endReason = "the session stopped before the photo was taken" }
            defer { self.queue = nil; self.thread = nil }
            return (self.queue, self.thread)
        }
        queue?.put(.ended(lock.withLock { endReason } ?? "the session stopped"))
        queue?.close()
        thread?.join()
        tellEndObservers()
        capture.withLock { state in
            state.ring.removeAll()
            state.run = PhotoFrameRun(layout: .raw(.gray8, bytesPerRow: nil), byteLimit: 0)
            state.wanted = nil
            state.videoInput = nil
        }
    }

    // MARK: Processing thread

    private enum Wait {
        case frame(PhotoFrame)
        case ended(String)
    }

    private func processingLoop(_ queue: BoundedQueue<Message>) {
        var ended: String?
        while true {
            let request: Request
            if !pending.isEmpty {
                request = pending.removeFirst()
            } else {
                guard let message = queue.take() else { break }
                switch message {
                case .request(let next): request = next
                case .frame: continue
                case .ended(let reason):
                    ended = ended ?? reason
                    continue
                }
            }
            if let ended {
                fail(request, reason: ended, resolved: nil)
                continue
            }
            if case .ended(let reason) = serve(request, queue) { ended = reason }
        }
        for request in pending { fail(request, reason: ended ?? "the session stopped before the photo was taken", resolved: nil) }
        pending = []
    }

    /// The next wanted frame (captured at or after `notBefore`, nanoseconds), or why none will come.
    private func waitForFrame(_ queue: BoundedQueue<Message>, notBefore: Int64?, sinceFirst: Int64 = 0) -> Wait {
        let want = Want(notBefore: notBefore, sinceFirst: sinceFirst)
        capture.withLock { $0.wanted = want }
        defer { capture.withLock { $0.wanted = nil } }
        while let message = queue.take() {
            switch message {
            case .request(let request): pending.append(request)
            case .frame(let frame):
                // A frame handed over earlier (before this wait began) must still meet it.
                let stamp = frame.chosen.presentationTime.converted(toTimescale: MonotonicClock.timescale).value
                let (first, last) = capture.withLock { ($0.firstEligible ?? stamp, lastTaken) }
                let fits = stamp >= (notBefore ?? .min) && stamp - first >= sinceFirst && stamp > (last ?? .min)
                guard fits else {
                    capture.withLock { $0.wanted = want }
                    continue
                }
                lastTaken = stamp
                return .frame(frame)
            case .ended(let reason): return .ended(reason)
            }
        }
        return .ended(lock.withLock { endReason } ?? "the session stopped before the photo was taken")
    }

    /// Fails a request, giving it every progress event it has not had yet.
    private func fail(_ request: Request, reason: String, resolved: ResolvedPhotoSettings?, after events: Int = 0, error: PhotoError? = nil) {
        let settings = resolved ?? Self.unresolved(request.settings, format: videoFormat)
        let delegate = request.delegate
        if events < 1 { delegate.photoOutput(self, willBeginCaptureFor: settings) }
        if events < 2 { delegate.photoOutput(self, willCapturePhotoFor: settings) }
        if events < 3 { delegate.photoOutput(self, didCapturePhotoFor: settings, timestamp: .invalid) }
        delegate.photoOutput(self, didFinishCaptureFor: settings, error: error ?? .captureEnded(reason))
    }

    /// Serves one request; answers `.ended` when capture ended meanwhile.
    @discardableResult
    private func serve(_ request: Request, _ queue: BoundedQueue<Message>) -> Wait? {
        let settings = request.settings
        let delegate = request.delegate
        guard let format = videoFormat else {
            fail(request, reason: "the camera is not open", resolved: nil)
            return nil
        }

        // Resolve: does the flash fire? (auto meters a frame first)
        var fires = settings.flashMode == .on
        do throws(PhotoError) {
            _ = try Self.resolve(settings, for: format)
            if settings.flashMode == .auto, flashDevice != nil {
                switch waitForFrame(queue, notBefore: nil) {
                case .ended(let reason):
                    fail(request, reason: reason, resolved: nil)
                    return .ended(reason)
                case .frame(let frame):
                    fires = try converter.meanLuma(of: frame, configuration: format.codecConfiguration) < darkLumaThreshold
                }
            }
        } catch {
            fail(request, reason: error.description, resolved: nil, error: error)
            return nil
        }
        let resolved: ResolvedPhotoSettings
        do { resolved = try Self.resolve(settings, for: format, flashFired: fires) } catch {
            fail(request, reason: error.description, resolved: nil, error: error)
            return nil
        }
        delegate.photoOutput(self, willBeginCaptureFor: resolved)

        var firedAt: Int64?
        if fires, let flash = flashDevice {
            do { try flash.fire() } catch {
                fail(request, reason: error.description, resolved: resolved, after: 1, error: error)
                return nil
            }
            firedAt = MonotonicClock.nowNanoseconds()
        }
        delegate.photoOutput(self, willCapturePhotoFor: resolved)

        let frame: PhotoFrame
        switch waitForFrame(queue, notBefore: firedAt, sinceFirst: movieLead(for: settings)) {
        case .ended(let reason):
            if fires { flashDevice?.extinguish() }
            fail(request, reason: reason, resolved: resolved, after: 2)
            return .ended(reason)
        case .frame(let taken):
            frame = taken
        }
        if fires { flashDevice?.extinguish() }
        delegate.photoOutput(self, didCapturePhotoFor: resolved, timestamp: frame.chosen.presentationTime)

        var failure: PhotoError?
        do throws(PhotoError) {
            let photo = try makePhoto(from: frame, resolved: resolved)
            delegate.photoOutput(self, didFinishProcessingPhoto: photo)
        } catch {
            failure = error
        }
        var outcome: Wait?
        if failure == nil, let moviePath = resolved.livePhotoMovieFilePath {
            do throws(PhotoError) {
                let (movie, ended) = try makeLiveMovie(around: frame.chosen, path: moviePath, resolved: resolved, queue: queue)
                delegate.photoOutput(self, didFinishProcessingLivePhotoMovie: movie)
                if let ended { outcome = .ended(ended) }
            } catch {
                failure = error
            }
        }
        delegate.photoOutput(self, didFinishCaptureFor: resolved, error: failure)
        return outcome
    }

    /// How long after the first frame that could be a photo a request's
    /// frame comes: a live photo waits until the ring holds the first half of its movie.
    private func movieLead(for settings: PhotoSettings) -> Int64 {
        guard settings.livePhotoMovieFilePath != nil, lock.withLock({ liveEnabled }) else { return 0 }
        return livePhotoMovieDuration.converted(toTimescale: MonotonicClock.timescale).value / 2
    }
}
