import CFFmpeg
import CFFmpegLoader
import Synchronization

/// What FFmpeg's libraries say while CaptureKit uses them (a deprecated
/// pixel format, an encoder's settings, a damaged packet): off by default,
/// so that no library call writes on the program's stderr; a program that
/// wants the lines sets a handler. Errors that matter reach the caller as
/// thrown errors either way.
public enum FFmpegLog {
    /// How severe a line is, as FFmpeg grades it.
    public enum Level: Int32, Sendable, Comparable {
        case panic = 0, fatal = 8, error = 16, warning = 24, info = 32, verbose = 40, debug = 48

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    private static let handler = Mutex<(@Sendable (Level, String) -> Void)?>(nil)

    /// Sends FFmpeg's lines up to `level` (warnings and worse by default)
    /// to `handler`, on whatever thread FFmpeg logs from; nil stops them.
    public static func setHandler(level: Level = .warning, _ newHandler: (@Sendable (Level, String) -> Void)?) {
        FFmpegLogging.configure()
        handler.withLock { $0 = newHandler }
        av_log_set_level(newHandler == nil ? AV_LOG_QUIET : level.rawValue)
        capctl_ffmpeg_set_log_sink(newHandler == nil ? nil : { level, line in
            guard let line else { return }
            var text = String(cString: line)
            while text.last == "\n" { text.removeLast() }
            let grade = Level(rawValue: level) ?? (level < 16 ? .fatal : .debug)
            FFmpegLog.handler.withLock { $0 }?(grade, text)
        })
    }
}
