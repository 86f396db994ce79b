/// Why a file could not be read back.
public enum PlaybackError: Error, Sendable, Equatable, CustomStringConvertible {
    case noSuchFile(path: String)
    case permissionDenied(path: String)
    /// The path is a directory, a device or something else that is not a regular file.
    case notAFile(path: String)
    /// The file is not in a media format libavformat reads.
    case notMedia(path: String, reason: String)
    /// The file is damaged or cut short where it matters.
    case corrupt(path: String, reason: String)
    /// The file has no track of the kind asked for.
    case noTrack(path: String, mediaType: MediaType)
    /// No decoder for the track's codec in this libavcodec.
    case decoderNotFound(path: String, codec: String)
    /// A time outside the file.
    case timeOutOfRange(path: String, time: MediaTime, duration: MediaTime)
    case io(path: String, error: SystemCallError)
    case ffmpeg(path: String, error: FFmpegError)

    public var description: String {
        switch self {
        case .noSuchFile(let path): return "\(path): no such file"
        case .permissionDenied(let path): return "\(path): permission denied"
        case .notAFile(let path): return "\(path): not a regular file"
        case .notMedia(let path, let reason): return "\(path): not a media file (\(reason))"
        case .corrupt(let path, let reason): return "\(path): damaged or truncated (\(reason))"
        case .noTrack(let path, let type): return "\(path): has no \(type.rawValue) track"
        case .decoderNotFound(let path, let codec): return "\(path): no decoder for \(codec) in this libavcodec"
        case .timeOutOfRange(let path, let time, let duration):
            return "\(path): \(formatSeconds(time)) is outside the file, which lasts \(formatSeconds(duration))"
        case .io(let path, let error): return "\(path): \(error.description)"
        case .ffmpeg(let path, let error): return "\(path): \(error.description)"
        }
    }
}

/// Seconds with up to three decimals: `2.5 s`.
func formatSeconds(_ time: MediaTime) -> String {
    guard time.isNumeric else { return time.description }
    var text = String(format3: time.seconds)
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
    return text + " s"
}

extension String {
    /// A number with exactly three decimals, without Foundation.
    init(format3 value: Double) {
        let scaled = (value * 1000).rounded()
        let negative = scaled < 0
        let magnitude = Int64(abs(scaled))
        let fraction = magnitude % 1000
        let padded = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
        self = (negative ? "-" : "") + "\(magnitude / 1000).\(padded)"
    }
}
