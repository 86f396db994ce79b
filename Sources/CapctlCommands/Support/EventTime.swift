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

    /// The wall-clock time at which the capture clock (CLOCK_MONOTONIC) read `time`.
    package static func wallTime(ofCaptureTime time: MediaTime) -> String {
        let elapsed = MonotonicClock.nowNanoseconds() - time.converted(toTimescale: MonotonicClock.timescale).value
        let wall = MonotonicClock.realtimeNanoseconds() - elapsed
        return format(timespec(tv_sec: Int(wall / 1_000_000_000), tv_nsec: Int(wall % 1_000_000_000)))
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
