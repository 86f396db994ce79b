/// Picks a time-lapse's frames from one camera's frames, in capture order:
/// tick k is at `origin + k × interval`, and each frame belongs to the tick
/// nearest to it; of a tick's frames the nearest is kept (on a tie, the
/// earlier). A kept frame is known once a frame comes that is no nearer
/// (at most one frame after the tick), so a recording's requests never
/// wait on more than that. Ticks without a frame are answered as missed.
/// Times are nanoseconds on the capture clock. A value type with no
/// locking: its owner serializes the calls.
struct TimeLapsePicker<Frame> {
    /// What one frame's arrival settles.
    struct Outcome {
        /// A frame kept, with its tick.
        var picked: (frame: Frame, tick: Int64)?
        /// Ticks that passed with no frame near them.
        var missed: Range<Int64> = 0..<0
    }

    let interval: Int64
    /// Tick 0's time: the first frame's unless one is given (several cameras share it).
    private(set) var origin: Int64?
    /// The nearest frame so far of the tick being decided.
    private var pending: (frame: Frame, tick: Int64, distance: Int64)?
    /// The last tick decided (kept or missed); nil before the first frame.
    private var decided: Int64?

    init(interval: Int64, origin: Int64? = nil) {
        precondition(interval > 0, "a time-lapse interval is longer than zero")
        self.interval = interval
        self.origin = origin
    }

    /// The tick nearest to `time` (halfway between two ticks goes to the later).
    func tick(at time: Int64) -> Int64? {
        guard let origin else { return nil }
        let offset = time - origin
        return Int64((Double(offset) / Double(interval)).rounded(.toNearestOrAwayFromZero))
    }

    /// Takes a frame captured at `time`.
    mutating func offer(_ frame: Frame, at time: Int64) -> Outcome {
        if origin == nil { origin = time }
        guard let origin, let tick = tick(at: time), tick >= 0 else { return Outcome() }
        let distance = abs(time - origin - tick * interval)
        var outcome = Outcome()
        if let held = pending {
            if tick == held.tick && distance < held.distance {
                pending = (frame, tick, distance)
                return outcome
            }
            // No frame after this one comes nearer to the held frame's tick.
            outcome.picked = (held.frame, held.tick)
            decided = held.tick
            pending = nil
        }
        if let decided, tick <= decided { return outcome }
        // The first tick a camera sees is its first; after that, the ticks passed over were missed.
        if let decided, tick > decided + 1 { outcome.missed = (decided + 1)..<tick }
        pending = (frame, tick, distance)
        if decided == nil { decided = tick - 1 }
        return outcome
    }
}
