/// The times of a steady run of samples: sample `n` starts at
/// `start + n × numerator / denominator` seconds, in CLOCK_MONOTONIC
/// nanoseconds, exactly (no drift from rounding a period).
struct SampleClock {
    let start: Int64
    /// Seconds per sample, as a fraction.
    let numerator: Int64
    let denominator: Int64

    func nanoseconds(at index: Int64) -> Int64 {
        let whole = index * numerator
        return start + (whole / denominator) * 1_000_000_000 + (whole % denominator) * 1_000_000_000 / denominator
    }

    /// The time of sample `index` as a media time.
    func time(at index: Int64) -> MediaTime {
        MediaTime(value: nanoseconds(at: index), timescale: MonotonicClock.timescale)
    }

    /// Seconds per frame for `framesPerSecond` as a fraction: exact for whole
    /// rates and the NTSC family (29.97 is 1001/30000, to the three decimals
    /// such rates are written with), else to a microsecond.
    static func frameDuration(framesPerSecond rate: Double) -> (numerator: Int64, denominator: Int64) {
        if rate == rate.rounded() { return (1, Int64(rate)) }
        let ntsc = (rate * 1.001).rounded()
        if ntsc > 0, abs(ntsc / 1.001 - rate) < 5e-4 { return (1001, Int64(ntsc) * 1000) }
        return (1_000_000, Int64((rate * 1_000_000).rounded()))
    }
}
