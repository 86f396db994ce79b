/// A source that makes its samples by a clock of its own (the test pattern,
/// the test tone) rather than a device's. A session gives every such source
/// the same start, so that they begin together however late each capture
/// thread comes to run: on a busy or emulated machine a thread started a few
/// milliseconds after another would otherwise open its track that much later
/// (a tone 21 ms behind its pattern, past one AAC frame).
protocol SessionClockedSource: AnyObject {
    /// Where the next run's clock starts (CLOCK_MONOTONIC nanoseconds): set by
    /// the session just before it starts the capture threads.
    func startClock(at nanoseconds: Int64)
}

extension SessionClockedSource {
    /// The start a run takes: the session's, unless that is already far behind
    /// (a thread that came to run that late would deliver a burst of the samples
    /// it missed; it starts at its own time instead, as a device would).
    static func clockStart(_ sessionStart: Int64?) -> Int64 {
        let now = MonotonicClock.nowNanoseconds()
        guard let sessionStart, sessionStart <= now, now - sessionStart <= 250_000_000 else { return now }
        return sessionStart
    }
}
