#if canImport(Glibc)
import Glibc
#endif

/// The name of each file of a recording: `%n` is the file's number (from 1;
/// `%3n` pads it to three digits), `%c` the camera's number (from 1, in the
/// order of the session's inputs; with it, each camera is recorded to a file
/// of its own), `%%` a percent sign, and any other `%` field is strftime's,
/// filled in with the local time the file starts (`rec-%Y%m%d-%H%M%S.mp4`).
/// (strftime's own `%c`, the locale's date and time, is not available.)
public struct FileNameTemplate: Sendable, Hashable {
    public let pattern: String

    /// Checks the pattern: fields must be complete and known to strftime.
    public init(_ pattern: String) throws(RecordingError) {
        var index = pattern.startIndex
        while index < pattern.endIndex {
            if pattern[index] == "%" {
                var next = pattern.index(after: index)
                while next < pattern.endIndex, pattern[next].isNumber { next = pattern.index(after: next) }
                guard next < pattern.endIndex else {
                    throw .unsupported("output template '\(pattern)' ends in an incomplete % field; write %% for a percent sign")
                }
                let field = pattern[next]
                let numbered = next > pattern.index(after: index)
                if numbered && field != "n" && field != "c" {
                    throw .unsupported("output template '\(pattern)': a width is only allowed on %n and %c (such as %3n)")
                }
                // A width pads the number with that many zeros: one past a file name's 255 bytes
                // makes a name no file system takes (and %87362474055655127n no memory holds).
                if numbered {
                    let width = pattern[pattern.index(after: index)..<next]
                    guard width.allSatisfy(\.isASCII), let value = Int(width), value <= 255 else {
                        throw .unsupported("output template: the width %\(width.prefix(12))\(width.count > 12 ? "…" : "")\(field) is wider than a file's name (255 bytes); use a width such as %3\(field)")
                    }
                }
                if !"n%aAbBcCdDeFgGhHIjklmMpsrRStTuUVwWxXyYzZ".contains(field) {
                    throw .unsupported("output template '\(pattern)': %\(field) is not a field; use %n for the file number, %c for the camera's, or a strftime field")
                }
                index = pattern.index(after: next)
            } else {
                index = pattern.index(after: index)
            }
        }
        self.pattern = pattern
    }

    /// Whether the pattern holds the file number.
    public var hasCounter: Bool { fields.contains("n") }

    /// Whether the pattern holds the camera number: one file per camera.
    public var hasCameraNumber: Bool { fields.contains("c") }

    /// Whether the pattern holds any field (else it is a file's name as it is).
    public var hasFields: Bool { !fields.isEmpty }

    /// Whether every file gets a name of its own: a counter, or a time field down to the second.
    public var namesEachFile: Bool { hasCounter || fields.contains { "sSTr".contains($0) } }

    /// Whether the pattern holds a strftime field: a time.
    public var hasTimeFields: Bool { fields.contains { $0 != "n" && $0 != "c" && $0 != "%" } }

    /// The pattern's fields (`n`, `c`, `%`, strftime's letters), in order.
    var fields: [Character] {
        var result: [Character] = []
        var index = pattern.startIndex
        while index < pattern.endIndex {
            if pattern[index] == "%" {
                var next = pattern.index(after: index)
                while next < pattern.endIndex, pattern[next].isNumber { next = pattern.index(after: next) }
                if next < pattern.endIndex { result.append(pattern[next]) }
                index = next < pattern.endIndex ? pattern.index(after: next) : next
            } else {
                index = pattern.index(after: index)
            }
        }
        return result
    }

    /// The name of file number `number` of camera `camera` starting at `time` (seconds since the epoch).
    public func path(number: Int, camera: Int = 1, time: Int = Int(Glibc.time(nil))) -> String {
        var output = ""
        var strftimePart = ""
        func flush() {
            guard !strftimePart.isEmpty else { return }
            output += Self.strftime(strftimePart, time: time)
            strftimePart = ""
        }
        var index = pattern.startIndex
        while index < pattern.endIndex {
            let character = pattern[index]
            guard character == "%" else {
                strftimePart.append(character)
                index = pattern.index(after: index)
                continue
            }
            var next = pattern.index(after: index)
            var width = ""
            while next < pattern.endIndex, pattern[next].isNumber {
                width.append(pattern[next])
                next = pattern.index(after: next)
            }
            let field = pattern[next]
            if field == "n" || field == "c" {
                flush()
                let digits = String(field == "n" ? number : camera)
                let pad = max(0, (Int(width) ?? 0) - digits.count)
                output += String(repeating: "0", count: pad) + digits
            } else {
                strftimePart += "%" + String(field)
            }
            index = pattern.index(after: next)
        }
        flush()
        return output
    }

    /// A name for file `number` when the pattern has no counter: `-N` before the extension.
    public static func numbered(_ path: String, number: Int) -> String {
        guard number > 1 else { return path }
        let slash = path.lastIndex(of: "/")
        if let dot = path.lastIndex(of: "."), slash.map({ dot > $0 }) ?? true, dot != path.startIndex {
            return String(path[..<dot]) + "-\(number)" + String(path[dot...])
        }
        return path + "-\(number)"
    }

    private static func strftime(_ format: String, time: Int) -> String {
        var seconds = time_t(time)
        var parts = tm()
        localtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 4096)
        let written = Glibc.strftime(&buffer, buffer.count, format, &parts)
        guard written > 0 else { return format.isEmpty ? "" : format }
        return String(decoding: buffer[..<written].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
