/// The capture times of audio chunks read from a device, and the frames lost
/// between them. Pure arithmetic on nanoseconds, so it is testable without a
/// sound card.
struct AudioCaptureTiming: Sendable {
    let sampleRate: Int
    /// Where the chunk after the last one should start, in nanoseconds.
    private var expectedNext: Int64?

    init(sampleRate: Int) {
        self.sampleRate = sampleRate
    }

    /// When the first frame still to be read was captured: `available`
    /// frames were waiting at `timestamp` (the device's stamp of its latest
    /// frame), so the oldest of them is `available / rate` older.
    static func firstFrameTime(timestamp: Int64, available: Int, sampleRate: Int) -> Int64 {
        timestamp - nanoseconds(frames: available, sampleRate: sampleRate)
    }

    static func nanoseconds(frames: Int, sampleRate: Int) -> Int64 {
        guard sampleRate > 0 else { return 0 }
        return Int64(frames) * 1_000_000_000 / Int64(sampleRate)
    }

    /// Records a chunk of `frames` starting at `start`. After an overrun,
    /// returns how many frames the device lost before it (measured from where
    /// the previous chunk ended); otherwise 0, and the chunk is taken to
    /// follow on, so small jitter in the device's stamps is not a loss.
    mutating func record(start: Int64, frames: Int, afterOverrun: Bool) -> Int {
        defer { expectedNext = start + Self.nanoseconds(frames: frames, sampleRate: sampleRate) }
        guard afterOverrun, let expectedNext else { return 0 }
        let gap = start - expectedNext
        guard gap > 0 else { return 0 }
        return Int((Double(gap) * Double(sampleRate) / 1e9).rounded())
    }

    /// Where the next chunk is expected to start, once one was recorded.
    var nextStart: Int64? { expectedNext }
}
