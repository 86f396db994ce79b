import CapctlCommands
import CapctlService
import Hummingbird

/// Refuses (415) a request that changes something and has a body not declared
/// `Content-Type: application/json` (parameters such as `; charset=utf-8` may
/// follow). Every body the API takes is JSON; and the declaration keeps other
/// pages out: a page may send a form, or `fetch` text/plain, to any address
/// without asking, but a JSON body only to its own origin, or where CORS allows
/// it, which this service never does.
struct ContentTypeMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A WHEP resource takes DELETE alone: PATCH (trickle ICE) is answered 405 by the router.
        if [.post, .put, .patch, .delete].contains(request.method), Self.hasBody(request), !request.uri.path.hasPrefix("/whep/") {
            let contentType = request.headers[.contentType]
            // A WHEP offer is SDP, a type a page may send only to its own origin too.
            if Self.isWHEPOffer(request) {
                guard let contentType, Self.mediaType(contentType) == "application/sdp" else {
                    let sent = contentType.map { "it came as '\($0)'" } ?? "it came without one"
                    throw ServiceError.http(.unsupportedMediaType, "a WHEP offer must be sent with 'Content-Type: application/sdp'; \(sent)")
                }
                return try await next(request, context)
            }
            guard let contentType, Self.isJSON(contentType) else {
                let sent = contentType.map { "it came as '\($0)'" } ?? "it came without one"
                throw ServiceError.http(.unsupportedMediaType,
                                        "a request body must be JSON, sent with 'Content-Type: application/json'; \(sent)")
            }
        }
        return try await next(request, context)
    }

    /// Whether a request has a body of at least one byte: a Content-Length other
    /// than 0, or a Transfer-Encoding (chunked: a length not known ahead).
    static func hasBody(_ request: Request) -> Bool {
        if request.headers[.transferEncoding] != nil { return true }
        guard let length = request.headers[.contentLength] else { return false }
        return Int(length) != 0
    }

    /// Whether a Content-Type is `application/json`, in any case, with or without parameters.
    static func isJSON(_ contentType: String) -> Bool {
        mediaType(contentType) == "application/json"
    }

    /// A Content-Type's media type in lower case, without parameters (nil if malformed).
    static func mediaType(_ contentType: String) -> String? {
        let mediaType = contentType.prefix { $0 != ";" }.split { $0 == " " || $0 == "\t" }
        return mediaType.count == 1 ? mediaType[0].lowercased() : nil
    }

    /// POST /devices/{id}/whep.
    static func isWHEPOffer(_ request: Request) -> Bool {
        guard request.method == .post else { return false }
        let parts = request.uri.path.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0].isEmpty && parts[1] == "devices" && !parts[2].isEmpty && parts[3] == "whep"
    }
}
