#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The time source of timed control changes (zoom ramps, one-shot automatic
/// modes that settle and lock). Tests substitute a clock that only moves when slept.
protocol ControlClock: Sendable {
    /// Seconds on a monotonic clock.
    func now() -> Double
    /// Sleeps until `deadline` (seconds on the same clock); returns at once if it has passed.
    func sleep(until deadline: Double)
}

/// CLOCK_MONOTONIC and clock_nanosleep.
struct MonotonicControlClock: ControlClock {
    init() {}

    func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    func sleep(until deadline: Double) {
        guard deadline > now() else { return }
        var target = timespec()
        target.tv_sec = Int(deadline.rounded(.down))
        target.tv_nsec = Int((deadline - deadline.rounded(.down)) * 1e9)
        // Interrupted by a signal (EINTR): sleep on to the same absolute deadline.
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
    }
}

/// A request to stop a long control change (a zoom ramp) early, from any
/// thread or from a signal handler's flag.
package final class ControlCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    /// Asks the change to stop where it is.
    package func cancel() {
        flag.store(true, ordering: .relaxed)
    }

    package var isCancelled: Bool { flag.load(ordering: .relaxed) }
}
