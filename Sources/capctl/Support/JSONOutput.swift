import CaptureKit
import FoundationEssentials

/// Prints JSON on stdout: one document for `--json` results, or one object a
/// line (NDJSON) for events. Keys are sorted, so output is stable byte for byte.
enum JSONOutput {
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
        lock.lock()
        defer { lock.unlock() }
        var data = try encoder.encode(value)
        data.append(UInt8(ascii: "\n"))
        StandardStream.output.write([UInt8](data))
    }
}
