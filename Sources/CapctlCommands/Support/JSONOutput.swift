import CaptureKit
import FoundationEssentials

/// Prints JSON on stdout: one document for `--json` results, or one object a
/// line (NDJSON) for events. Keys are sorted, so output is stable byte for byte.
package enum JSONOutput {
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Serializes printing: events come from several threads (a recording's
    /// writer and its progress timer), and each line must reach stdout whole.
    private static let lock = Lock()

    /// Writes `value` as one line of JSON and flushes, so a reader sees it at
    /// once. Safe from any thread: lines never interleave.
    static func printLine<T: Encodable>(_ value: T) throws {
        writeLine(try line(value))
    }

    /// `value` as one line of JSON, without its newline; keys sorted.
    package static func line<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Writes a line made by `line(_:)` to stdout and flushes; lines never interleave.
    package static func writeLine(_ line: String) {
        lock.withLock { StandardStream.output.write(line + "\n") }
    }
}
