#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC, the one clock every sample is stamped on. Times are
/// media times in nanoseconds.
package enum MonotonicClock {
    package static let timescale: Int32 = 1_000_000_000

    /// The current time.
    package static func now() -> MediaTime {
        MediaTime(value: nowNanoseconds(), timescale: timescale)
    }

    package static func nowNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// CLOCK_REALTIME in nanoseconds, for converting stamps of drivers that use it.
    package static func realtimeNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// A media time for `seconds` and `microseconds` (a timeval) or nanoseconds.
    package static func time(seconds: Int64, nanoseconds: Int64) -> MediaTime {
        MediaTime(value: seconds * 1_000_000_000 + nanoseconds, timescale: timescale)
    }
}
