import Foundation

/// Prints JSON on stdout: one document for `--json` results, or one object a
/// line (NDJSON) for events. Keys are sorted, so output is stable byte for byte.
enum JSONOutput {
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Writes `value` as one line of JSON and flushes, so a reader sees it at once.
    static func printLine<T: Encodable>(_ value: T) throws {
        let data = try encoder.encode(value)
        FileHandle.standardOutput.write(data)
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
