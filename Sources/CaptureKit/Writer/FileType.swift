import CFFmpeg

/// The container an `AssetWriter` writes, like AVFileType: a movie format
/// (MP4, QuickTime, Matroska, WebM, MPEG-TS) or an audio file format (WAV,
/// FLAC, M4A, Ogg).
public enum FileType: String, Sendable, CaseIterable, Codable {
    case mp4
    case quickTimeMovie = "mov"
    case matroska = "mkv"
    case webm
    case mpegTS = "ts"
    case wav
    case flac
    case m4a
    case ogg
    case opus

    /// The file type a name's extension implies (`.mp4`, `.mov`, `.mkv`,
    /// `.webm`, `.ts`, `.wav`, `.flac`, `.m4a`, `.ogg`, `.opus`), or nil.
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov", "qt": self = .quickTimeMovie
        case "mkv", "mka": self = .matroska
        case "webm": self = .webm
        case "ts", "m2ts", "mts": self = .mpegTS
        case "wav": self = .wav
        case "flac": self = .flac
        case "m4a": self = .m4a
        case "ogg", "oga": self = .ogg
        case "opus": self = .opus
        default: return nil
        }
    }

    /// The file type for a path, from its extension.
    public init?(path: String) {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        self.init(pathExtension: String(name[name.index(after: dot)...]))
    }

    /// The libavformat muxer that writes this type.
    var muxerName: String {
        switch self {
        case .mp4: return "mp4"
        case .quickTimeMovie: return "mov"
        case .matroska: return "matroska"
        case .webm: return "webm"
        case .mpegTS: return "mpegts"
        case .wav: return "wav"
        case .flac: return "flac"
        case .m4a: return "ipod"
        case .ogg: return "ogg"
        case .opus: return "opus"
        }
    }

    /// A short human name, as errors and `info` print it.
    public var displayName: String {
        switch self {
        case .mp4: return "MP4"
        case .quickTimeMovie: return "QuickTime movie"
        case .matroska: return "Matroska"
        case .webm: return "WebM"
        case .mpegTS: return "MPEG-TS"
        case .wav: return "WAV"
        case .flac: return "FLAC"
        case .m4a: return "M4A"
        case .ogg: return "Ogg"
        case .opus: return "Ogg Opus"
        }
    }

    /// The ISO base media family (MP4, QuickTime, M4A): these carry edit
    /// lists, fragments, a movie time scale and alternate track groups.
    public var isMovieFamily: Bool {
        self == .mp4 || self == .quickTimeMovie || self == .m4a
    }

    /// The media types this container can hold.
    public var availableMediaTypes: [MediaType] {
        switch self {
        case .wav, .flac, .m4a, .ogg, .opus: return [.audio]
        default: return [.video, .audio]
        }
    }

    /// Whether tracks can be marked as alternates of each other: QuickTime
    /// and MP4 have alternate groups; in Matroska and WebM, tracks of one
    /// type are alternatives and the default flag picks the one to play.
    public var supportsAlternateGroups: Bool {
        isMovieFamily || self == .matroska || self == .webm
    }

    /// Whether `AssetWriter.movieFragmentInterval` applies.
    public var supportsFragments: Bool { self == .mp4 || self == .quickTimeMovie || self == .m4a }
}
