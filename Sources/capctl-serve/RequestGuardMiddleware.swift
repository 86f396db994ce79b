import CapctlCommands
import CapctlService
import FoundationEssentials
import Hummingbird
#if canImport(Glibc)
import Glibc
#endif

/// The service's rules for every request, before any handler runs:
/// - it has one Host: with two, a proxy in front and the service could each
///   take a different one for the host the request is for;
/// - its Host names the service: an address (a name could be an attacker's
///   that resolves to this machine: DNS rebinding), localhost, or a name
///   given with --allow-host;
/// - with a token, it carries it (`Authorization: Bearer`, or for a GET,
///   `access_token` in the query, as a browser's EventSource cannot send headers),
///   except the page of `GET /`, which holds no data and asks for the token itself;
/// - a request that changes something and carries an Origin, or without one a
///   Referer, comes from the service's own pages, so that a web page the user
///   visits cannot steer it.
struct RequestGuardMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let token: String?
    let allowedHosts: Set<String>

    init(configuration: ServiceConfiguration) {
        token = configuration.token
        allowedHosts = Set(configuration.allowedHosts + ["localhost"])
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The first Host is the request's authority, taken out of its header fields; any further one stays among them.
        guard !request.headers.contains(where: { $0.name.canonicalName == "host" }) else {
            throw ServiceError.http(.badRequest, "the request has more than one Host header; send one")
        }
        guard let authority = request.head.authority, let host = Self.hostName(authority) else {
            throw ServiceError.http(.badRequest, "the request has no valid Host header")
        }
        guard Self.isAddress(host) || allowedHosts.contains(host) else {
            throw ServiceError.http(.forbidden, "Host '\(authority)' does not name this service; reach it by its address, or start it with --allow-host \(host)")
        }
        if let token, !Self.isPage(request), !Self.carries(token, request) {
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = "Bearer realm=\"capctl\""
            throw ServiceError.http(.unauthorized, "this service needs its token: send 'Authorization: Bearer TOKEN'", headers: headers)
        }
        if ![.get, .head, .options].contains(request.method) {
            if let origin = request.headers[.origin] {
                guard SameOrigin.origin(origin, matches: authority) else {
                    throw ServiceError.http(.forbidden, "requests from the page at \(origin) may not change anything on this service")
                }
            } else if let referer = request.headers[.referer] {
                // Without an Origin (older browsers leave it out of some requests), the Referer names the page.
                let page = SameOrigin.origin(ofReferer: referer)
                guard let page, SameOrigin.origin(page, matches: authority) else {
                    let sender = page.map { "the page at \($0)" } ?? "a page whose Referer is no absolute URL"
                    throw ServiceError.http(.forbidden, "requests from \(sender) may not change anything on this service")
                }
            }
        }
        return try await next(request, context)
    }

    /// The host of a Host header, lowercased, without its port or an IPv6 address's brackets.
    static func hostName(_ authority: String) -> String? {
        let lowered = authority.lowercased()
        if lowered.hasPrefix("[") {
            guard let close = lowered.firstIndex(of: "]") else { return nil }
            return String(lowered[lowered.index(after: lowered.startIndex)..<close])
        }
        let host = lowered.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return host.isEmpty ? nil : host
    }

    /// An IPv4 or IPv6 address, which no DNS answer can change.
    static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// `GET /`: the page, the same for everyone, which asks for the token before its first request.
    static func isPage(_ request: Request) -> Bool {
        request.method == .get && request.uri.path == "/"
    }

    /// Whether the request carries the token, compared in constant time.
    static func carries(_ token: String, _ request: Request) -> Bool {
        var presented: Substring?
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { presented = parts[1] }
        } else if request.method == .get || request.method == .head {
            presented = request.uri.queryParameters["access_token"]
        }
        guard let presented else { return false }
        let expected = Array(token.utf8), given = Array(presented.utf8)
        var difference = expected.count ^ given.count
        for index in expected.indices { difference |= Int(expected[index] ^ (index < given.count ? given[index] : 0)) }
        return difference == 0
    }
}
