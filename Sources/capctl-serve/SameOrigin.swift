/// Whether the page a request comes from is the service's own: its `Origin`,
/// or the origin of its `Referer`, names the host and port of its `Host`.
enum SameOrigin {
    /// Whether an origin (`scheme://host[:port]`) is the service's own: the same host and port as the request's Host.
    static func origin(_ origin: String, matches authority: String) -> Bool {
        guard let schemeEnd = origin.firstRange(of: "://") else { return false }
        let scheme = origin[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return false }
        var originAuthority = String(origin[schemeEnd.upperBound...]).lowercased()
        var host = authority.lowercased()
        // A default port may be left out on either side.
        for suffix in [":80", ":443"] {
            if originAuthority.hasSuffix(suffix) { originAuthority.removeLast(suffix.count) }
            if host.hasSuffix(suffix) { host.removeLast(suffix.count) }
        }
        return originAuthority == host
    }

    /// The origin (`scheme://host[:port]`) of a Referer, the URL of the page a
    /// request comes from; nil when it is not an absolute URL.
    static func origin(ofReferer referer: String) -> String? {
        guard let schemeEnd = referer.firstRange(of: "://") else { return nil }
        let afterScheme = referer[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        guard authorityEnd > afterScheme.startIndex else { return nil }
        return String(referer[..<authorityEnd])
    }
}
