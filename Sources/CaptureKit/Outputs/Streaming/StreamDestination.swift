#if canImport(Glibc)
import Glibc
#endif

/// The container a stream is sent in.
public enum StreamFormat: String, Sendable, Hashable, CaseIterable {
    /// Flash Video: what RTMP servers take.
    case flv
    /// MPEG transport stream: what SRT and UDP carry.
    case mpegts
    /// RTSP's own (RTP packets announced to the server with ANNOUNCE/RECORD).
    case rtsp

    /// libavformat's name of the muxer.
    var muxerName: String { rawValue }

    /// The video codecs the container carries, by libavcodec name.
    public var videoCodecs: Set<String> {
        switch self {
        case .flv: return ["h264"]
        case .mpegts, .rtsp: return ["h264", "hevc"]
        }
    }
}

/// Where a stream is published: a media server's URL, checked before anything
/// is opened, and the container that follows from its scheme.
public struct StreamDestination: Sendable, Hashable, CustomStringConvertible {
    /// The schemes that publish, and the container each takes by default.
    public static let schemes: [String: StreamFormat] = [
        "rtmp": .flv, "rtmps": .flv, "srt": .mpegts, "udp": .mpegts, "rtsp": .rtsp,
    ]

    /// The URL as given.
    public let url: String
    public let scheme: String
    public let host: String
    public let port: Int?
    public let format: StreamFormat

    /// Parses `url`; `format` overrides the scheme's container. Throws when the
    /// scheme cannot publish, the host or port is malformed, or the scheme
    /// cannot carry the container.
    public init(_ url: String, format: StreamFormat? = nil) throws(StreamDestinationError) {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { throw .malformed(url) }
        let scheme = url[..<colon].lowercased()
        guard let defaultFormat = Self.schemes[scheme] else { throw .scheme(url, scheme: scheme) }
        let rest = url[url.index(colon, offsetBy: 3)...]
        var authority = Substring(rest.prefix { $0 != "/" && $0 != "?" })
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            // [IPv6]:port
            guard let close = authority.firstIndex(of: "]") else { throw .host(url) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw .host(url) }
        } else if let portColon = authority.lastIndex(of: ":") {
            host = authority[..<portColon]
            portText = authority[authority.index(after: portColon)...]
        } else {
            host = authority
        }
        guard Self.isValidHost(host) else { throw .host(url) }
        var port: Int?
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { throw .port(url) }
            port = value
        } else if scheme == "srt" || scheme == "udp" {
            throw .port(url)
        }
        let chosen = format ?? defaultFormat
        // RTSP publishes with its own protocol and RTMP carries FLV tags;
        // SRT and UDP take any byte stream.
        guard chosen == defaultFormat || ((scheme == "srt" || scheme == "udp") && chosen != .rtsp) else { throw .format(url, format: chosen) }
        self.url = url
        self.scheme = scheme
        self.host = String(host)
        self.port = port
        self.format = chosen
    }

    private static func isValidHost(_ host: Substring) -> Bool {
        guard !host.isEmpty, host.count <= 253 else { return false }
        if host.contains(":") { return host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } }
        return host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }
            && !host.hasPrefix("-") && !host.hasPrefix(".")
    }

    /// Looks the host up (numeric addresses need no lookup): a name that
    /// does not resolve throws `unknownHost`. Whether anything answers there
    /// is only learnt by connecting.
    public func resolveHost() throws(StreamDestinationError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &result)
        if let result { freeaddrinfo(result) }
        // A lookup that could not be made now (no network yet) is not a
        // verdict: connecting will try again.
        guard status == 0 || status == EAI_AGAIN else { throw .unknownHost(url, host: host, reason: String(cString: gai_strerror(status))) }
    }

    /// Why the host does not resolve, or nil when it does (or when the
    /// lookup could not be made now). Blocks for the lookup: for the thread
    /// that connects, never for argument checking.
    var hostLookupFailure: String? {
        do throws(StreamDestinationError) {
            try resolveHost()
            return nil
        } catch {
            return error.description
        }
    }

    /// The URL with what may be secret left out (credentials, the stream key
    /// that ends the path, query parameters such as an SRT passphrase), for
    /// events and logs.
    public var description: String { Self.redacted(url) }

    /// `url` with its credentials, the last segment of its path and its
    /// query left out; works on any text, also one that does not parse.
    public static func redacted(_ url: String) -> String {
        guard let separator = url.firstRange(of: "://") else { return url.contains("/") ? String(url.prefix { $0 != "/" }) + "/…" : url }
        let scheme = url[..<separator.lowerBound].lowercased()
        let rest = url[separator.upperBound...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var shown = "\(scheme)://\(authority)"
        let afterAuthority = rest.drop { $0 != "/" && $0 != "?" }
        let path = afterAuthority.prefix { $0 != "?" }
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        if segments.count > 1 {
            shown += "/" + segments.dropLast().joined(separator: "/") + "/…"
        } else if !segments.isEmpty {
            shown += "/…"
        }
        if afterAuthority.contains("?") { shown += "?…" }
        return shown
    }
}

/// Why a stream URL was refused before anything was opened.
public enum StreamDestinationError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    case scheme(String, scheme: String)
    case host(String)
    case port(String)
    case format(String, format: StreamFormat)
    case unknownHost(String, host: String, reason: String)

    public var description: String {
        switch self {
        case .malformed(let url): return "'\(StreamDestination.redacted(url))' is not a URL such as rtmp://server/live/key"
        case .scheme(_, let scheme): return "cannot publish to '\(scheme)://'; use rtmp://, rtmps://, srt://, rtsp:// or udp://"
        case .host(let url): return "'\(StreamDestination.redacted(url))' names no valid host"
        case .port(let url): return "'\(StreamDestination.redacted(url))' needs a port from 1 to 65535 (srt:// and udp:// always do)"
        case .format(let url, let format):
            if format == .rtsp { return "the rtsp format needs an rtsp:// URL" }
            let scheme = url.prefix { $0 != ":" }.lowercased()
            return scheme == "rtsp" ? "rtsp:// publishes in its own format, not \(format.rawValue)" : "\(scheme):// carries FLV only, not \(format.rawValue)"
        case .unknownHost(_, let host, let reason): return "the host '\(host)' is not known (\(reason))"
        }
    }
}
