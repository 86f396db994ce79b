import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Measures the sound level of a microphone's audio as it is captured:
/// each buffer's peak and RMS per channel, on the input's capture thread
/// (a loop over the samples, into memory kept from buffer to buffer: nothing
/// is allocated per buffer). A session meters every audio input
/// (`CaptureInput.audioLevelMeter`); its connections show the levels as
/// AVCaptureConnection's `audioChannels` do.
///
/// Readings:
/// - `averagePowerLevel(channel:)` and `peakHoldLevel(channel:)`, live, as
///   AVCaptureAudioChannel gives them (see `CaptureAudioChannel`);
/// - `makeReader()`: the levels over an interval, such as the time
///   between two progress reports (each reader has its own intervals);
/// - `monitorSilence(_:queue:handler:)`: hears when the audio stays below a
///   level for a time, and when sound returns, on the capture clock.
public final class AudioLevelMeter: Sendable {
    /// The time constant, in seconds, the average power is integrated with
    /// (100 ms: a reading follows a change of level within about 300 ms, as
    /// a VU meter's needle does).
    public static let averagingTime = 0.1
    /// How long a peak is held before `peakHoldLevel` falls to a lower one.
    public static let peakHoldTime = 1.0

    /// A channel's live readings.
    private struct Ballistics {
        /// The mean square, integrated with the time constant `averagingTime`.
        var meanSquare = 0.0
        /// The highest peak of the last `peakHoldTime`, and until when (ns) it holds.
        var heldPeak: Float = 0
        var heldUntil: Int64 = .min
    }

    /// A tap held weakly: one that nobody else holds any more is dropped.
    private struct WeakTap {
        weak var tap: (any AudioLevelTap)?
    }

    /// Written by the capture thread (one buffer at a time), read by anyone.
    private struct State {
        /// The last buffer's levels, per channel (scratch kept between buffers).
        var peaks: [Float] = []
        var sumSquares: [Double] = []
        var ballistics: [Ballistics] = []
        var taps: [WeakTap] = []
        var buffers = 0
    }
    private let state = Mutex(State())

    /// A meter that has measured nothing yet (its levels read the floor).
    public init() {}

    /// The channel count of the audio measured last (0 before any).
    public var channelCount: Int { state.withLock { $0.ballistics.count } }

    /// Buffers measured so far.
    public var measuredBufferCount: Int { state.withLock { $0.buffers } }

    /// Measures one buffer: its levels update the live readings and reach
    /// every reader and silence monitor. The session calls it for each
    /// buffer of an audio input, on that input's capture thread.
    public func measure(_ buffer: AudioSampleBuffer) {
        let start = buffer.presentationTime.converted(toTimescale: MonotonicClock.timescale).value
        let rate = Int64(max(1, buffer.sampleRate))
        state.withLock { state in
            let channels = buffer.channels
            if state.peaks.count != channels {
                // A new channel count (the first buffer, or a new format): the only allocation.
                state.peaks = [Float](repeating: 0, count: channels)
                state.sumSquares = [Double](repeating: 0, count: channels)
                state.ballistics = [Ballistics](repeating: Ballistics(), count: channels)
            }
            let frames = AudioLevelMeasurement.measure(buffer, peaks: &state.peaks, sumSquares: &state.sumSquares)
            guard frames > 0 else { return }
            let end = start + Int64(frames) * 1_000_000_000 / rate
            let first = state.buffers == 0
            state.buffers += 1
            let weight = first ? 1 : 1 - exp(-Double(frames) / Double(rate) / Self.averagingTime)
            let hold = Int64(Self.peakHoldTime * 1e9)
            for channel in 0..<channels {
                let meanSquare = state.sumSquares[channel] / Double(frames)
                state.ballistics[channel].meanSquare += (meanSquare - state.ballistics[channel].meanSquare) * weight
                let peak = state.peaks[channel]
                if peak >= state.ballistics[channel].heldPeak || end > state.ballistics[channel].heldUntil {
                    state.ballistics[channel].heldPeak = peak
                    state.ballistics[channel].heldUntil = end + hold
                }
            }
            let levels = BufferLevels(peaks: state.peaks, sumSquares: state.sumSquares, frameCount: frames, start: start, end: end)
            var gone = false
            for entry in state.taps {
                if let tap = entry.tap { tap.take(levels) } else { gone = true }
            }
            if gone { state.taps.removeAll { $0.tap == nil } }
        }
    }

    /// A channel's average power in dBFS: the mean square of its samples
    /// integrated with the time constant `averagingTime` (the RMS level a
    /// VU meter shows, following a change within about 300 ms);
    /// `AudioLevels.floor` before any audio or for a channel it has not.
    public func averagePowerLevel(channel: Int) -> Float {
        state.withLock { state in
            guard state.ballistics.indices.contains(channel) else { return AudioLevels.floor }
            return AudioLevels.decibels(meanSquare: state.ballistics[channel].meanSquare)
        }
    }

    /// A channel's peak hold level in dBFS: the highest peak of about the
    /// last `peakHoldTime` (a higher peak takes its place at once; once held
    /// that long, the present peak does).
    public func peakHoldLevel(channel: Int) -> Float {
        state.withLock { state in
            guard state.ballistics.indices.contains(channel) else { return AudioLevels.floor }
            return AudioLevels.decibels(amplitude: Double(state.ballistics[channel].heldPeak))
        }
    }

    /// A reader of levels over intervals, from now on: each `read()`
    /// answers the levels since the one before. The meter holds it weakly:
    /// keep it for as long as it is to read.
    public func makeReader() -> AudioLevelReader {
        let reader = AudioLevelReader()
        add(reader)
        return reader
    }

    /// Watches for silence from now on: `handler` hears, on `queue`, when
    /// every channel stays below `configuration.threshold` for
    /// `configuration.timeout` of audio, and when sound returns. The meter
    /// holds the monitor weakly: keep it for as long as it is to watch.
    public func monitorSilence(_ configuration: AudioSilenceMonitor.Configuration, queue: DispatchQueue,
                               handler: @escaping @Sendable (AudioSilenceMonitor.Event) -> Void) -> AudioSilenceMonitor {
        let monitor = AudioSilenceMonitor(configuration: configuration, queue: queue, handler: handler)
        add(monitor)
        return monitor
    }

    private func add(_ tap: any AudioLevelTap) {
        state.withLock { $0.taps.append(WeakTap(tap: tap)) }
    }
}

/// One buffer's levels as the meter hands them on: each channel's peak
/// (full scale 1.0) and sum of squares, its frames and capture times (ns).
/// The arrays are the meter's own: a tap reads them while it is called and keeps none.
struct BufferLevels {
    let peaks: [Float]
    let sumSquares: [Double]
    let frameCount: Int
    let start: Int64
    let end: Int64

    /// The loudest channel's peak.
    var loudestPeak: Float { peaks.max() ?? 0 }
}

/// What a meter hands each buffer's levels to, on the capture thread,
/// under the meter's lock: it must be quick, never wait, and never call the meter.
protocol AudioLevelTap: AnyObject, Sendable {
    func take(_ levels: BufferLevels)
}
