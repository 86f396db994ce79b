import CFFmpeg
import CFFmpegLoader
#if canImport(Glibc)
import Glibc
#endif

/// A failed FFmpeg call: which function, the code it returned, and FFmpeg's
/// own text for that code (`av_strerror`).
public struct FFmpegError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The function that failed, such as `avcodec_open2(libx264)`.
    public let call: String
    /// The negative AVERROR code.
    public let code: Int32

    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }

    /// FFmpeg's description of the code, such as "Invalid data found when processing input".
    public var reason: String {
        var buffer = [CChar](repeating: 0, count: 128)
        if av_strerror(code, &buffer, buffer.count) < 0 {
            return "error \(code)"
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The errno value when the code wraps one (`AVERROR(ENOSPC)`), else nil.
    public var errno: Int32? {
        // AVERROR(e) is -e; FFERRTAG codes are far outside errno's range.
        code < 0 && code > -4096 ? -code : nil
    }

    /// True when the input ended, or is damaged or not media at all.
    public var isInvalidData: Bool { code == cffmpeg_AVERROR_INVALIDDATA }

    public var description: String { "\(call): \(reason)" }
}

/// Runs an FFmpeg call that returns a negative AVERROR code on failure and
/// throws an error naming the call and FFmpeg's text for the code; returns
/// the (non-negative) result otherwise.
@discardableResult
func ffmpegCall(_ name: @autoclosure () -> String, _ body: () -> Int32) throws(FFmpegError) -> Int32 {
    let result = body()
    if result < 0 { throw FFmpegError(call: name(), code: result) }
    return result
}

/// Returns a pointer FFmpeg allocated, or throws `ENOMEM` naming the call.
func ffmpegAllocation<T>(_ name: @autoclosure () -> String, _ body: () -> T?) throws(FFmpegError) -> T {
    guard let value = body() else { throw FFmpegError(call: name(), code: cffmpeg_averror(ENOMEM)) }
    return value
}

/// FFmpeg's own logging, which would print on stderr from inside the
/// libraries: off (see `FFmpegLog`), since CaptureKit reports failures
/// through errors. Setting the environment variable CAPCTL_FFMPEG_LOG to
/// error, warning, info, verbose or debug writes it on stderr at that level.
enum FFmpegLogging {
    static let configured: Void = {
        let levels: [String: Int32] = ["quiet": AV_LOG_QUIET, "error": AV_LOG_ERROR, "warning": AV_LOG_WARNING,
                                       "info": AV_LOG_INFO, "verbose": AV_LOG_VERBOSE, "debug": AV_LOG_DEBUG]
        let requested = getenv("CAPCTL_FFMPEG_LOG").map { String(cString: $0).lowercased() }
        let level = requested.flatMap { levels[$0] } ?? AV_LOG_QUIET
        av_log_set_level(level)
        if level > AV_LOG_QUIET { capctl_ffmpeg_set_log_sink { _, line in if let line { _ = write(STDERR_FILENO, line, strlen(line)) } } }
        EncoderLibraryLogs.quiet()
    }()

    static func configure() { _ = configured }
}

/// SVT-AV1 (libavcodec's libsvtav1) prints its configuration on stderr
/// through a logger of its own, which reads SVT_LOG when an encoder opens:
/// -1 leaves only what it prints unconditionally. Set unless FFmpeg's log
/// was asked for (CAPCTL_FFMPEG_LOG) or SVT_LOG itself was set. Changing
/// the environment races with any thread reading it (the overlay's local
/// time does), so a session does it as it is made, before its threads run;
/// FFmpeg's configuration does it too, for a program that writes files
/// without a session.
enum EncoderLibraryLogs {
    private static let quieted: Void = {
        let requested = getenv("CAPCTL_FFMPEG_LOG").map { String(cString: $0).lowercased() }
        let logged = ["error", "warning", "info", "verbose", "debug"]
        if !(requested.map(logged.contains) ?? false) { setenv("SVT_LOG", "-1", 0) }
    }()

    static func quiet() { _ = quieted }
}
