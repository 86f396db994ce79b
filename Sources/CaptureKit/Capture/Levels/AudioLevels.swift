#if canImport(Glibc)
import Glibc
#endif

/// How loud a stretch of audio was, channel by channel, in dBFS: decibels
/// relative to full scale, where 0 is the largest value the sample format
/// holds (32768 for signed 16-bit samples, 1.0 for floating point).
///
/// `peak` is the largest magnitude of any sample; `rms` the root mean
/// square, as power: a full-scale sine has a peak of 0 dBFS and an RMS of
/// −3.01 dBFS (no +3 dB correction is added). Silence has no finite level in
/// decibels; levels are never below `floor` (−160 dBFS, AVAudioRecorder's
/// "minimum power"), which digital silence (every sample zero) reads.
public struct AudioLevels: Sendable, Hashable {
    /// Each channel's peak level, in dBFS, in the order of the channels.
    public var peak: [Float]
    /// Each channel's RMS level, in dBFS.
    public var rms: [Float]
    /// The sample frames measured (one sample per channel each).
    public var frameCount: Int
    /// The capture time (CLOCK_MONOTONIC) of the first frame measured; nil when no audio was measured.
    public var startTime: MediaTime?
    /// The capture time just after the last frame measured; nil when no audio was measured.
    public var endTime: MediaTime?

    /// The lowest level reported: what digital silence reads.
    public static let floor: Float = -160

    /// Levels as given: each channel's peak and RMS in dBFS, the frames and times they cover.
    public init(peak: [Float], rms: [Float], frameCount: Int, startTime: MediaTime?, endTime: MediaTime?) {
        self.peak = peak
        self.rms = rms
        self.frameCount = frameCount
        self.startTime = startTime
        self.endTime = endTime
    }

    /// No audio: no channels, no frames.
    public static let none = AudioLevels(peak: [], rms: [], frameCount: 0, startTime: nil, endTime: nil)

    /// Whether any audio was measured.
    public var hasAudio: Bool { frameCount > 0 }

    /// The level in dBFS of `amplitude` (1.0 is full scale), never below `floor`.
    public static func decibels(amplitude: Double) -> Float {
        guard amplitude > 0 else { return floor }
        return max(floor, Float(20 * log10(amplitude)))
    }

    /// The level in dBFS of a mean square (power; 1.0 is full scale), never below `floor`.
    public static func decibels(meanSquare: Double) -> Float {
        guard meanSquare > 0 else { return floor }
        return max(floor, Float(10 * log10(meanSquare)))
    }

    /// The amplitude (1.0 is full scale) of a level in dBFS; 0 for −∞.
    public static func amplitude(decibels: Double) -> Double {
        decibels == -.infinity ? 0 : pow(10, decibels / 20)
    }
}
