import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A microphone that needs no hardware: a sine tone (at −6 dBFS unless
/// asked otherwise, or silence), signed 16-bit interleaved, in 20 ms
/// buffers; with a delay, silence until then (counted in frames from the
/// first, so the same in real time or not).
///
/// The buffer that starts at frame `k` is stamped `start + k / sampleRate`
/// on CLOCK_MONOTONIC, where `start` is when `run` began, and its samples
/// are the sine at those instants, so the phase runs on unbroken from one
/// buffer to the next. In real time a buffer is delivered no earlier than
/// the time of its last frame has come, as a sound card delivers it;
/// otherwise buffers come as fast as they are computed.
final class TestToneSource: CaptureSource, Sendable {
    let mediaType = MediaType.audio
    let path: String
    let localizedName: String
    let modelID: String? = nil
    let videoFormat: CaptureVideoFormat? = nil
    /// The format settled by `open()`.
    var audioFormat: CaptureAudioFormat? { settled.withLock { $0.format } }
    /// The tone's frequency in hertz.
    let frequency: Double
    /// Its peak level in dBFS (−∞: silence).
    let level: Double
    /// The seconds of silence before it begins.
    let delay: Double
    /// Its peak as a signed 16-bit value.
    let amplitude: Double
    let request: CaptureAudioRequest
    let realtime: Bool

    static let defaultSampleRate = 48000
    static let defaultChannels = 2
    /// The sample rates a tone may be made at (those that `isMade(atRate:)` also takes).
    static let sampleRateRange = 8000...192000
    /// The channel counts it has.
    static let channelRange = 1...2
    /// The default tone's peak: −6 dBFS of a signed 16-bit sample.
    static let defaultAmplitude = amplitude(level: VirtualDevice.defaultToneLevel)

    /// The peak of a tone at `level` dBFS (at most full scale, 32767; 0 for −∞).
    static func amplitude(level: Double) -> Double {
        level == -.infinity ? 0 : 32767 * pow(10, min(0, level) / 20)
    }
    /// Buffers per second (20 ms each).
    static let buffersPerSecond = 50
    static let poolLimit = 32

    /// What `open()` settled, read once by the capture loop as it starts.
    private struct Settled {
        /// The session's start for the next run's clock (`SessionClockedSource`).
        var clockStart: Int64?
        var format: CaptureAudioFormat?
        var pool: RecyclingBufferPool?
    }

    private let settled = Mutex(Settled())
    private let losses = SampleLossLog()

    /// A tone of `frequency` hertz whose peak is `level` dBFS (−∞ for
    /// silence), after `delay` seconds of silence, at the request's rate
    /// (8000 to 192000 Hz, else 48000) and channel count (1 or 2, else 2).
    init(frequency: Double = VirtualDevice.defaultToneFrequency, level: Double = VirtualDevice.defaultToneLevel, delay: Double = 0,
                request: CaptureAudioRequest = CaptureAudioRequest(), realtime: Bool = true) {
        self.frequency = frequency
        self.level = level
        self.delay = max(0, delay)
        amplitude = Self.amplitude(level: level)
        self.request = request
        self.realtime = realtime
        let device = VirtualDevice.testTone(frequency: frequency, level: level, delay: self.delay)
        path = device.specifier
        localizedName = device.localizedName
    }

    /// Audio frames lost because the consumer held every buffer.
    var droppedByDevice: Int { losses.total }
    var lossLog: SampleLossLog? { losses }

    func open() throws(CaptureError) {
        let rate = request.sampleRate ?? Self.defaultSampleRate
        let channels = request.channels ?? Self.defaultChannels
        guard Self.isMade(atRate: rate) else {
            throw .unsupported(path, reason: "the test tone is not made at \(rate) Hz; it is made at 8000 to 192000 Hz, such as 48000")
        }
        guard Self.channelRange.contains(channels) else {
            throw .unsupported(path, reason: "the test tone has 1 or 2 channels, not \(channels)")
        }
        guard frequency.isFinite, frequency > 0, canBeSampled(atRate: rate) else {
            throw .unsupported(path, reason: "a \(frequency) Hz tone cannot be sampled at \(rate) Hz; it must lie below \(rate / 2) Hz")
        }
        let pool = RecyclingBufferPool(bufferSize: rate / Self.buffersPerSecond * channels * 2, maximumCount: Self.poolLimit)
        settled.withLock { $0 = Settled(format: CaptureAudioFormat(sampleFormat: .s16, sampleRate: rate, channels: channels), pool: pool) }
    }

    /// Whether a tone is made at `rate`: in `sampleRateRange`, in whole 20 ms buffers.
    static func isMade(atRate rate: Int) -> Bool {
        sampleRateRange.contains(rate) && rate % buffersPerSecond == 0
    }

    /// Whether this tone can be sampled at `rate`: made at it, and below its Nyquist frequency.
    func canBeSampled(atRate rate: Int) -> Bool {
        Self.isMade(atRate: rate) && frequency < Double(rate) / 2
    }

    func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let opened = settled.withLock { $0 }
        guard let pool = opened.pool, let format = opened.format else { return .failed(.unsupported(path, reason: "the source is not open")) }
        let rate = format.sampleRate
        let chunk = rate / Self.buffersPerSecond
        let clock = SampleClock(start: Self.clockStart(opened.clockStart), numerator: 1, denominator: Int64(rate))
        var first: Int64 = 0
        while !stop.isRaised {
            let due = clock.nanoseconds(at: first + Int64(chunk))
            var taken = pool.take()
            if taken == nil {
                if realtime {
                    if stop.wait(untilNanoseconds: due) { break }
                    losses.record(chunk, atNanoseconds: clock.nanoseconds(at: first))
                    first += Int64(chunk)
                    continue
                }
                taken = pool.waitForBuffer(stop: stop)
            }
            guard let buffer = taken else { break }
            fill(buffer, first: first, frames: chunk, channels: format.channels, rate: rate)
            if realtime, stop.wait(untilNanoseconds: due) {
                pool.recycle(buffer)
                break
            }
            deliver(.audio(AudioSampleBuffer(
                storage: pool.lend(buffer, count: chunk * format.channels * 2), format: .s16, channels: format.channels,
                sampleRate: rate, frameCount: chunk, presentationTime: clock.time(at: first))))
            first += Int64(chunk)
        }
        return .stopped
    }

    /// The sine for frames `first ..< first + frames`, each frame's value in every channel.
    private func fill(_ buffer: UnsafeMutableRawBufferPointer, first: Int64, frames: Int, channels: Int, rate: Int) {
        let samples = buffer.bindMemory(to: Int16.self)
        let cycles = frequency / Double(rate)
        // Frames before the tone begins are silent.
        let silent = Int(max(0, min(Int64(frames), Int64((delay * Double(rate)).rounded()) - first)))
        for index in 0..<(silent * channels) { samples[index] = 0 }
        // The phase at the first frame, in cycles, reduced first so that it keeps its precision over long runs.
        let wholeSeconds = first / Int64(rate)
        let start = (frequency * Double(wholeSeconds)).truncatingRemainder(dividingBy: 1)
            + Double(first % Int64(rate)) * cycles
        for frame in silent..<frames {
            let value = Int16((amplitude * sin(2 * Double.pi * (start + Double(frame) * cycles))).rounded())
            for channel in 0..<channels { samples[frame * channels + channel] = value }
        }
    }

    /// Sample buffers made so far: stays small, however many samples were delivered.
    var allocatedBuffers: Int { settled.withLock { $0.pool }?.allocatedCount ?? 0 }

    func close() {
        settled.withLock { $0.pool = nil }
    }
}

extension TestToneSource: SessionClockedSource {
    func startClock(at nanoseconds: Int64) {
        settled.withLock { $0.clockStart = nanoseconds }
    }
}
