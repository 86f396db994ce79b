import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

/// The `time` field of events: UTC, ISO 8601 with milliseconds
/// (`2024-05-01T12:00:00.123Z`). Built with reentrant C calls, so events
/// from several threads (a recording's writer and its progress timer) can
/// stamp themselves at once.
package enum EventTime {
    package static func now() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return format(now)
    }

    /// Seconds since 1970 (UTC) of a frame's capture time on the session's
    /// monotonic clock, with microseconds: a live view's `X-Timestamp`.
    package static func unixSeconds(ofCaptureTime time: MediaTime) -> String {
        var realtime = timespec(), monotonic = timespec()
        clock_gettime(CLOCK_REALTIME, &realtime)
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        let since = (Int64(monotonic.tv_sec) * 1_000_000_000 + Int64(monotonic.tv_nsec)) - time.converted(toTimescale: MonotonicClock.timescale).value
        let micros = (Int64(realtime.tv_sec) * 1_000_000_000 + Int64(realtime.tv_nsec) - since) / 1000
        let fraction = String(micros % 1_000_000)
        return "\(micros / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
    }

    /// The wall-clock time of a CLOCK_MONOTONIC instant (nanoseconds), such
    /// as a frame's capture time: now, less the time since then.
    package static func time(ofMonotonic nanoseconds: Int64) -> String {
        var realtime = timespec(), monotonic = timespec()
        clock_gettime(CLOCK_REALTIME, &realtime)
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        let since = (Int64(monotonic.tv_sec) * 1_000_000_000 + Int64(monotonic.tv_nsec)) - nanoseconds
        let then = Int64(realtime.tv_sec) * 1_000_000_000 + Int64(realtime.tv_nsec) - since
        return format(timespec(tv_sec: Int(then / 1_000_000_000), tv_nsec: Int(then % 1_000_000_000)))
    }

    /// The wall-clock time at which the capture clock read `time`.
    package static func wallTime(ofCaptureTime time: MediaTime) -> String {
        self.time(ofMonotonic: time.converted(toTimescale: MonotonicClock.timescale).value)
    }

    /// A time in whole seconds since 1970, as the events write times.
    package static func time(ofUnixSeconds seconds: Int) -> String {
        format(timespec(tv_sec: seconds, tv_nsec: 0))
    }

    private static func format(_ now: timespec) -> String {
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        _ = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S", &parts)
        let millis = Int(now.tv_nsec / 1_000_000)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text + "." + String(repeating: "0", count: millis < 10 ? 2 : millis < 100 ? 1 : 0) + String(millis) + "Z"
    }
}
