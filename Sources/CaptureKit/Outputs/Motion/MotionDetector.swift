import Synchronization

/// Hears when a `MotionDetector` sees motion begin and end. Calls come one
/// at a time on the detector's thread (its video data output's), so the
/// protocol does not require `Sendable`, like every delegate of CaptureKit
/// except `CaptureRecorderDelegate`.
public protocol MotionDetectorDelegate: AnyObject {
    /// Motion began: it has lasted `minimumDuration` since `time` (the
    /// first frame that moved), and `score` is the share of the picture
    /// (percent) that changed in the frame that decided it.
    func motionDetector(_ detector: MotionDetector, didStartMotionAt time: MediaTime, score: Double)
    /// Motion ended: nothing moved from `time` for `stillDuration`;
    /// `score` is the highest of the event.
    func motionDetector(_ detector: MotionDetector, didEndMotionAt time: MediaTime, score: Double)
}

/// Watches a camera's frames for motion: each frame is reduced to a small
/// luma picture and compared with a running background (see the score
/// below); motion begins when at least `threshold` percent of the picture
/// changed for `minimumDuration`, and ends after `stillDuration` without.
/// Add its `output` (a `VideoDataOutput`) to a session: the work runs on
/// that output's thread, and frames that come while a frame is being
/// looked at are dropped, so a slow detector never holds capture back.
///
/// The score takes out what every part of the picture shares (light
/// getting brighter or darker) and averages sensor noise away in the
/// cells of the small picture; the background follows the picture within
/// about a second, so slow changes of light fade into it. The first second
/// of frames builds the background and cannot start motion.
public final class MotionDetector: VideoDataOutputSampleBufferDelegate, Sendable {

    /// What counts as motion.
    public struct Configuration: Sendable, Hashable {
        /// The share of the picture (percent) that must change.
        public var threshold: Double
        /// How long motion must last before it counts (short blips do not).
        public var minimumDuration: MediaTime
        /// How long the picture must stay still before motion ends.
        public var stillDuration: MediaTime

        /// 1 percent: more than sensor noise or a flicker of light, less than a person crossing the picture.
        public static let defaultThreshold = 1.0

        public init(threshold: Double = Configuration.defaultThreshold, minimumDuration: MediaTime = .zero,
                    stillDuration: MediaTime = MediaTime(value: 5, timescale: 1)) {
            self.threshold = threshold
            self.minimumDuration = minimumDuration
            self.stillDuration = stillDuration
        }
    }

    /// What the detector has seen so far.
    public struct Statistics: Sendable, Hashable {
        /// Frames looked at, frames that could not be read (compressed, or
        /// a pixel format without luma), and frames dropped while busy.
        public var framesAnalyzed = 0
        public var framesUnreadable = 0
        public var framesDropped = 0
        /// The latest frame's score (percent of the picture changed).
        public var latestScore = 0.0
        public var isMotionDetected = false
    }

    public let configuration: Configuration
    /// The output to add to the capture session.
    public let output: VideoDataOutput

    private struct Shared {
        weak var delegate: (any MotionDetectorDelegate)?
        var statistics = Statistics()
    }
    private let shared = Locked(Shared())

    /// The analysis: used on the output's thread only, so its lock is never contended.
    private struct Analysis {
        var analyzer = MotionAnalyzer()
        var moving = false
        /// The first frame of a run of frames that moved (not yet an event).
        var runStart: MediaTime?
        var lastMotion: MediaTime?
        var peak = 0.0
    }
    private let analysis = Mutex(Analysis())

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        output = VideoDataOutput(alwaysDiscardsLateVideoFrames: true)
        output.setSampleBufferDelegate(self)
    }

    /// Whether the detector can look at frames laid out as `layout`: raw
    /// frames with an 8-bit luma (YUV) or green (RGB) sample per pixel. A
    /// camera that sends others (compressed, Bayer, more than 8 bits) never
    /// starts motion: choose another format for it.
    public static func canAnalyze(_ layout: VideoSampleLayout) -> Bool {
        LumaThumbnail.canRead(layout)
    }

    /// Sets the delegate (held weakly) that hears motion begin and end.
    public func setDelegate(_ delegate: (any MotionDetectorDelegate)?) {
        shared.withLock { $0.delegate = delegate }
    }

    public var statistics: Statistics {
        var snapshot = shared.withLock { $0.statistics }
        snapshot.framesDropped = output.droppedFrameCount
        return snapshot
    }

    // MARK: VideoDataOutputSampleBufferDelegate (the output's thread)

    public func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from input: CaptureInput) {
        guard let thumbnail = LumaThumbnail(sample) else {
            shared.withLock { $0.statistics.framesUnreadable += 1 }
            return
        }
        let time = sample.presentationTime
        let (score, event, moving) = analysis.withLock { analysis in
            let score = analysis.analyzer.score(thumbnail, at: time)
            let event = Self.decide(score: score, at: time, in: &analysis, configuration: configuration)
            return (score, event, analysis.moving)
        }
        let delegate = shared.withLock { shared in
            shared.statistics.framesAnalyzed += 1
            shared.statistics.latestScore = score
            shared.statistics.isMotionDetected = moving
            return shared.delegate
        }
        switch event {
        case .started(let at)?: delegate?.motionDetector(self, didStartMotionAt: at, score: score)
        case .ended(let at, let peak)?: delegate?.motionDetector(self, didEndMotionAt: at, score: peak)
        case nil: break
        }
    }

    private enum Event {
        case started(MediaTime)
        case ended(MediaTime, peak: Double)
    }

    /// The motion state after a frame scored `score` at `time`.
    private static func decide(score: Double, at time: MediaTime, in state: inout Analysis, configuration: Configuration) -> Event? {
        let moved = score >= configuration.threshold
        if state.moving {
            state.peak = max(state.peak, score)
            if moved {
                state.lastMotion = time
                return nil
            }
            guard let last = state.lastMotion, time - last >= configuration.stillDuration.nanoseconds else { return nil }
            state.moving = false
            state.runStart = nil
            return .ended(last, peak: state.peak)
        }
        guard moved else {
            state.runStart = nil
            return nil
        }
        let start = state.runStart ?? time
        state.runStart = start
        guard time - start >= configuration.minimumDuration.nanoseconds else { return nil }
        state.moving = true
        state.lastMotion = time
        state.peak = score
        return .started(start)
    }
}
