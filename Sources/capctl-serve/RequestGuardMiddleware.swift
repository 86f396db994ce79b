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
/// - (who it is, and what it may do, `AccessMiddleware` checks next;)
/// - a request that changes something and carries an Origin, or without one a
///   Referer, comes from the service's own pages, so that a web page the user
///   visits cannot steer it.
/// Its refusals are counted by reason (`host`, `origin`) with the access checks'.
struct RequestGuardMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let allowedHosts: Set<String>
    let access: AccessControl

    init(configuration: ServiceConfiguration, access: AccessControl) {
        allowedHosts = Set(configuration.allowedHosts + ["localhost"])
        self.access = access
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
            throw forbid(.host, "Host '\(authority)' does not name this service; reach it by its address, or start it with --allow-host \(host)")
        }
        if ![.get, .head, .options].contains(request.method) {
            if let origin = request.headers[.origin] {
                guard SameOrigin.origin(origin, matches: authority) else {
                    throw forbid(.origin, "requests from the page at \(origin) may not change anything on this service")
                }
            } else if let referer = request.headers[.referer] {
                // Without an Origin (older browsers leave it out of some requests), the Referer names the page.
                let page = SameOrigin.origin(ofReferer: referer)
                guard let page, SameOrigin.origin(page, matches: authority) else {
                    let sender = page.map { "the page at \($0)" } ?? "a page whose Referer is no absolute URL"
                    throw forbid(.origin, "requests from \(sender) may not change anything on this service")
                }
            }
        }
        return try await next(request, context)
    }

    private func forbid(_ reason: AccessRefusal.Reason, _ message: String) -> ServiceHTTPError {
        access.count(AccessRefusal(reason, message))
        return ServiceError.http(.forbidden, message)
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
}
