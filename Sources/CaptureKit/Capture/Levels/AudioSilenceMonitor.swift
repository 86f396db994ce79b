import Dispatch
import Synchronization

/// Watches a meter's audio for silence: when the peak of every channel
/// stays below a threshold for a time, and when sound returns. Time is the
/// capture clock's (the buffers' own stamps), never the wall clock, and is
/// told to the buffer: silence begins with the first buffer whose every
/// sample is below the threshold, and ends with the first buffer that has a
/// sample at or above it (as ffmpeg's silencedetect, which compares samples).
/// Made by `AudioLevelMeter.monitorSilence(_:queue:handler:)`.
public final class AudioSilenceMonitor: Sendable, AudioLevelTap {
    /// What counts as silence, and for how long before it is told.
    public struct Configuration: Sendable, Hashable {
        /// The level, in dBFS, that every sample of every channel stays below while silent.
        public var threshold: Double
        /// How long the audio stays below the threshold before it is told silent.
        public var timeout: MediaTime

        /// −60 dBFS, as ffmpeg's silencedetect takes by default.
        public static let defaultThreshold = -60.0

        /// Silence below `threshold` dBFS for `timeout`.
        public init(threshold: Double = Self.defaultThreshold, timeout: MediaTime) {
            self.threshold = threshold
            self.timeout = timeout
        }
    }

    /// What a monitor tells.
    public enum Event: Sendable, Hashable {
        /// The audio has been below the threshold since `since` (capture
        /// time of the first silent buffer) for the timeout.
        case silent(since: MediaTime)
        /// Sound returned at `at` (capture time of the first buffer with a
        /// sample at or above the threshold) after silence since `since`.
        /// Only after a `silent`.
        case restored(since: MediaTime, at: MediaTime)

        /// How long the silence lasted, for `restored`; for `silent`, zero.
        public var silentFor: MediaTime {
            switch self {
            case .silent: return .zero
            case .restored(let since, let at): return at - since
            }
        }
    }

    /// What it counts as silence.
    public let configuration: Configuration
    private let queue: DispatchQueue
    private let handler: @Sendable (Event) -> Void
    /// The threshold as an amplitude (full scale 1.0), and the timeout in nanoseconds.
    private let limit: Float
    private let timeout: Int64

    /// Kept by the capture thread, read by anyone.
    private struct Watch {
        /// When the present run of silent buffers began (ns), if one runs.
        var silentSince: Int64?
        /// Whether that run has been told (it lasted the timeout).
        var told = false
    }
    private let watch = Mutex(Watch())

    init(configuration: Configuration, queue: DispatchQueue, handler: @escaping @Sendable (Event) -> Void) {
        self.configuration = configuration
        self.queue = queue
        self.handler = handler
        limit = Float(AudioLevels.amplitude(decibels: configuration.threshold))
        timeout = max(0, configuration.timeout.converted(toTimescale: MonotonicClock.timescale).value)
    }

    /// Whether the audio is silent now, as told: below the threshold for the timeout and not yet back.
    public var isSilent: Bool { watch.withLock { $0.told } }

    func take(_ levels: BufferLevels) {
        let event = watch.withLock { watch -> Event? in
            if levels.loudestPeak < limit {
                let since = watch.silentSince ?? levels.start
                watch.silentSince = since
                guard !watch.told, levels.end - since >= timeout else { return nil }
                watch.told = true
                return .silent(since: Self.time(since))
            }
            defer { watch = Watch() }
            guard watch.told, let since = watch.silentSince else { return nil }
            return .restored(since: Self.time(since), at: Self.time(levels.start))
        }
        // Rare (a change of state): the only time a closure is made.
        if let event { queue.async { [handler] in handler(event) } }
    }

    private static func time(_ nanoseconds: Int64) -> MediaTime {
        MediaTime(value: nanoseconds, timescale: MonotonicClock.timescale)
    }
}
