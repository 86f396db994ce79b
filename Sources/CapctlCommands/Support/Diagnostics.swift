import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Writes diagnostics to stderr, one line each, prefixed with the tool's
/// name; the severity is coloured only when stderr is a terminal (and
/// NO_COLOR is unset), so logs and pipes get plain text.
enum Diagnostics {
    static func error(_ message: String) {
        emit(severity: "error", colour: "\u{1B}[1;31m", message)
    }

    static func warning(_ message: String) {
        emit(severity: "warning", colour: "\u{1B}[1;33m", message)
    }

    private static let useColour: Bool = isatty(STDERR_FILENO) == 1 && getenv("NO_COLOR") == nil

    private static func emit(severity: String, colour: String, _ message: String) {
        // One line, whatever the message holds, so that scripts can read it.
        let oneLine = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        let label = useColour ? "\(colour)\(severity):\u{1B}[0m" : "\(severity):"
        let line = "capctl: \(label) \(oneLine)\n"
        StandardStream.error.write(line)
    }
}
