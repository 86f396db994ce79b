#if canImport(Glibc)
import Glibc
#endif

/// Text burned into every frame of a camera (a time stamp, the camera's
/// name): what to write and where. `TextOverlayRenderer` draws it.
///
/// `text` is a strftime(3) template read at each frame's capture time in
/// local wall time, with two fields of its own: `%f`, the milliseconds
/// (three digits), and `{camera}`, the camera's name. `%%` is a percent sign.
package struct TextOverlay: Sendable, Hashable {
    /// The corner the text sits in.
    package enum Position: String, Sendable, Hashable, CaseIterable {
        case topLeft = "top-left", topRight = "top-right", bottomLeft = "bottom-left", bottomRight = "bottom-right"
    }

    package var text: String
    package var position: Position

    package init(text: String, position: Position = .topLeft) {
        self.text = text
        self.position = position
    }

    /// The text for a frame captured at `captureTime` (CLOCK_MONOTONIC) by `camera`.
    package func text(at captureTime: MediaTime, camera: String) -> String {
        let since = MonotonicClock.nowNanoseconds() - captureTime.converted(toTimescale: MonotonicClock.timescale).value
        return text(atWallTime: MonotonicClock.realtimeNanoseconds() - since, camera: camera)
    }

    /// The text for the wall-clock instant `nanoseconds` since 1970 (UTC), shown in local time.
    package func text(atWallTime nanoseconds: Int64, camera: String) -> String {
        var seconds = Int(nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000).quotient)
        var fraction = nanoseconds % 1_000_000_000
        if fraction < 0 { fraction += 1_000_000_000; seconds -= 1 }
        let millis = String(fraction / 1_000_000)
        let template = expand(millis: String(repeating: "0", count: 3 - millis.count) + millis, camera: camera)
        Self.setTimeZoneOnce
        var parts = tm()
        localtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 1024)
        let count = strftime(&buffer, buffer.count, template, &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The template with `%f` and `{camera}` written out (a `%` in the
    /// camera's name doubled), ready for strftime.
    private func expand(millis: String, camera: String) -> String {
        var out = ""
        var characters = text[...]
        while let first = characters.first {
            if first == "%", characters.dropFirst().first == "f" {
                out += millis
                characters = characters.dropFirst(2)
            } else if first == "%", let next = characters.dropFirst().first {
                out.append(first)
                out.append(next)
                characters = characters.dropFirst(2)
            } else if characters.hasPrefix("{camera}") {
                out += camera.replacingPercent()
                characters = characters.dropFirst("{camera}".count)
            } else {
                out.append(first)
                characters = characters.dropFirst()
            }
        }
        return out
    }

    /// localtime_r reads the time zone only if tzset ran once (POSIX leaves it open).
    private static let setTimeZoneOnce: Void = tzset()
}

private extension String {
    func replacingPercent() -> String {
        var out = ""
        for character in self { out += character == "%" ? "%%" : String(character) }
        return out
    }
}
