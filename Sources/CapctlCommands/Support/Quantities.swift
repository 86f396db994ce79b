import ArgumentParser
import CaptureKit

/// A length of time on the command line: seconds (`90`, `2.5`), `mm:ss.fff`,
/// `hh:mm:ss.fff`, or with units (`2h`, `1h30m`, `45s`, `500ms`).
package struct DurationArgument: ExpressibleByArgument, CustomStringConvertible {
    package let time: MediaTime
    let text: String

    /// A length: longer than zero.
    package init?(argument: String) {
        guard let parsed = DurationArgument(instant: argument), parsed.time > .zero else { return nil }
        self = parsed
    }

    /// A point in time, which may be zero (`frame --at 0`), in the same spellings.
    init?(instant argument: String) {
        let text = argument.trimmingWhitespace()
        guard let time = MediaTime(parsing: text) ?? Self.parseUnits(text), time >= .zero else { return nil }
        self.time = time
        self.text = text
    }

    /// `init(instant:)` for `@Option(transform:)`: a time that may be zero,
    /// or an error that names the spellings.
    static func instant(_ argument: String) throws -> DurationArgument {
        guard let parsed = DurationArgument(instant: argument) else { throw NotATime() }
        return parsed
    }

    /// Why a value is not a time, for the parser's message.
    struct NotATime: Error, CustomStringConvertible {
        var description: String { "use seconds (2.5), mm:ss.fff, hh:mm:ss.fff or units (1m30s, 1.5s, 500ms)" }
    }

    package var description: String { text }

    static var defaultValueDescription: String { "a positive time: 90, 1:30, 2h, 1h30m, 45s or 500ms" }

    /// `1h30m15.5s`, `500ms`: numbers each followed by h, m, s or ms.
    private static func parseUnits(_ text: String) -> MediaTime? {
        let units: [(String, Int64)] = [("ms", 1), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        var rest = Substring(text.lowercased())
        var millis: Double = 0
        var any = false
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            guard let unit = units.first(where: { rest.hasPrefix($0.0) }) else { return nil }
            rest = rest.dropFirst(unit.0.count)
            millis += value * Double(unit.1)
            any = true
        }
        guard any, millis.isFinite, millis < 1e15 else { return nil }
        return MediaTime(value: Int64(millis.rounded()), timescale: 1000)
    }
}

/// A number of bytes on the command line: `500K`, `20M`, `4G` (powers of
/// 1000), `1GiB`, `512MiB` (powers of 1024), or plain bytes.
package struct ByteCountArgument: ExpressibleByArgument, CustomStringConvertible {
    let bytes: Int64
    let text: String

    package init?(argument: String) {
        let text = argument.trimmingWhitespace()
        let lower = text.lowercased()
        let number = lower.prefix { $0.isNumber || $0 == "." }
        guard !number.isEmpty, let value = Double(number), value >= 0 else { return nil }
        var unit = String(lower.dropFirst(number.count)).trimmingWhitespace()
        if unit.hasSuffix("b") && unit != "b" || unit == "b" { unit = String(unit.dropLast()) }
        let multipliers: [String: Double] = ["": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
                                             "ki": 1024, "mi": 1_048_576, "gi": 1_073_741_824, "ti": 1_099_511_627_776]
        guard let multiplier = multipliers[unit] else { return nil }
        let total = value * multiplier
        guard total.isFinite, total < 9e18 else { return nil }
        bytes = Int64(total.rounded())
        self.text = text
    }

    init(bytes: Int64, text: String) {
        self.bytes = bytes
        self.text = text
    }

    package var description: String { text }

    static var defaultValueDescription: String { "a size: 500K, 20M, 4G (powers of 1000) or 1GiB (powers of 1024)" }
}

/// `WIDTHxHEIGHT`, each side from 1 to `maximumSide`.
package struct FrameSizeArgument: ExpressibleByArgument, CustomStringConvertible {
    let width: Int
    let height: Int

    /// The largest side every path takes: CaptureKit's video encoder refuses
    /// more (x264 and x265 stop at 16384), while its scaler, pixel buffers
    /// and photo output would take up to 32768.
    static let maximumSide = 16384

    package init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]),
              (1...Self.maximumSide).contains(width), (1...Self.maximumSide).contains(height) else { return nil }
        self.width = width
        self.height = height
    }

    package var description: String { "\(width)x\(height)" }
}

/// Frames per second: `30`, `29.97`, `30000/1001`.
package struct RateArgument: ExpressibleByArgument, CustomStringConvertible {
    let value: Double

    package init?(argument: String) {
        let parts = argument.split(separator: "/")
        let rate: Double?
        if parts.count == 2, let numerator = Double(parts[0]), let denominator = Double(parts[1]), denominator > 0 {
            rate = numerator / denominator
        } else {
            rate = Double(argument)
        }
        guard let rate, rate.isFinite, rate > 0, rate <= 1000 else { return nil }
        value = rate
    }

    package var description: String { String(value) }
}

extension SessionPreset: ExpressibleByArgument {}

/// Bytes for people: `1.5 MB`, `320 kB`.
func formatBytes(_ bytes: Int64) -> String {
    let value = Double(bytes)
    if value >= 1e9 { return String(cFormat: "%.2f GB", value / 1e9) }
    if value >= 1e6 { return String(cFormat: "%.1f MB", value / 1e6) }
    if value >= 1e3 { return String(cFormat: "%.0f kB", value / 1e3) }
    return "\(bytes) B"
}

/// A media time as `hh:mm:ss.s`.
func formatClock(_ seconds: Double) -> String {
    let total = max(0, seconds)
    let hours = Int(total / 3600)
    let minutes = Int(total.truncatingRemainder(dividingBy: 3600) / 60)
    let rest = total.truncatingRemainder(dividingBy: 60)
    return String(cFormat: "%02ld:%02ld:%04.1f", hours, minutes, rest)
}
