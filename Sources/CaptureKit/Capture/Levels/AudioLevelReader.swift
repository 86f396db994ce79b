import Synchronization

/// Levels over intervals of a meter's audio, such as the time between two
/// progress reports: each `read()` answers the peak and RMS of each channel
/// over the audio measured since the read before (or since the reader was
/// made) and begins the next interval. Made by `AudioLevelMeter.makeReader()`;
/// several readers of one meter keep intervals of their own.
public final class AudioLevelReader: Sendable, AudioLevelTap {
    /// The interval so far: linear peaks and sums of squares per channel,
    /// kept from interval to interval (the capture thread adds to them in place).
    private struct Interval {
        var peaks: [Float] = []
        var sumSquares: [Double] = []
        var frames = 0
        var start: Int64?
        var end: Int64?

        var levels: AudioLevels {
            guard frames > 0 else {
                return AudioLevels(peak: [], rms: [], frameCount: 0, startTime: nil, endTime: nil)
            }
            return AudioLevels(peak: peaks.map { AudioLevels.decibels(amplitude: Double($0)) },
                               rms: sumSquares.map { AudioLevels.decibels(meanSquare: $0 / Double(frames)) },
                               frameCount: frames,
                               startTime: start.map { MediaTime(value: $0, timescale: MonotonicClock.timescale) },
                               endTime: end.map { MediaTime(value: $0, timescale: MonotonicClock.timescale) })
        }

        mutating func reset() {
            for channel in peaks.indices {
                peaks[channel] = 0
                sumSquares[channel] = 0
            }
            frames = 0
            start = nil
            end = nil
        }
    }
    private let interval = Mutex(Interval())

    init() {}

    /// The levels since the last read (or since the reader was made), and a
    /// new interval from now. No audio in the interval: no channels, no frames.
    public func read() -> AudioLevels {
        interval.withLock { interval in
            defer { interval.reset() }
            return interval.levels
        }
    }

    /// The levels of the interval so far, without beginning a new one.
    public var current: AudioLevels { interval.withLock { $0.levels } }

    func take(_ levels: BufferLevels) {
        interval.withLock { interval in
            let channels = levels.peaks.count
            if interval.peaks.count != channels {
                // The first buffer, or a new channel count: what came before in other channels is left out.
                interval.peaks = [Float](repeating: 0, count: channels)
                interval.sumSquares = [Double](repeating: 0, count: channels)
                interval.frames = 0
                interval.start = nil
            }
            for channel in 0..<channels {
                if levels.peaks[channel] > interval.peaks[channel] { interval.peaks[channel] = levels.peaks[channel] }
                interval.sumSquares[channel] += levels.sumSquares[channel]
            }
            interval.frames += levels.frameCount
            if interval.start == nil { interval.start = levels.start }
            interval.end = levels.end
        }
    }
}
