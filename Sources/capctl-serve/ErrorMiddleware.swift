import CapctlCommands
import CapctlService
import FoundationEssentials
import Hummingbird
import NIOCore

/// Gives the framework's own failures a one-line reason as the service's
/// refusals have (`{"error": "…"}`): no such path, a body too large or not
/// the JSON a request takes, and anything unforeseen (500). The service's
/// refusals (`ServiceError`) and the HTTP layer's (`ServiceHTTPError`) are
/// Hummingbird's `HTTPResponseError`s, which make their own responses: they
/// pass through untouched.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    /// The methods the service's paths take: a path it has, asked with another method, is a 405.
    let routes: RouteMethods

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .head else { return try await translate(request, context: context, next: next) }
        do {
            return try await translate(request, context: context, next: next)
        } catch let error as any HTTPResponseError {
            // A refusal of a HEAD without its body: HTTP/1.1's encoder leaves it out, HTTP/2's sends what it
            // is given, and a body on a HEAD's answer is an error to an HTTP/2 client.
            var response = try error.response(from: request, context: context)
            response.body = ResponseBody()
            return response
        }
    }

    private func translate(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ServiceError {
            throw error
        } catch let error as ServiceHTTPError {
            throw error
        } catch let error as HTTPError {
            let message: String
            switch error.status {
            case .notFound:
                let allowed = routes.methods(for: request.uri.path)
                guard allowed.isEmpty else {
                    throw ServiceHTTPError(status: .methodNotAllowed, message: "\(request.method) is not taken on \(request.uri.path); it takes \(allowed.joined(separator: ", "))",
                                           headers: [.allow: allowed.joined(separator: ", ")])
                }
                message = "no such path: \(request.uri.path); GET /openapi.json describes the API"
            case .methodNotAllowed: message = "\(request.method) is not taken on \(request.uri.path)"
            case .contentTooLarge: message = "the request body is larger than 64 KiB"
            default: message = error.body ?? error.status.reasonPhrase
            }
            throw ServiceHTTPError(status: error.status, message: message, headers: error.headers)
        } catch is NIOTooManyBytesError {
            // A body collected up to the context's limit (64 KiB) that goes on.
            throw ServiceHTTPError(status: .contentTooLarge, message: "the request body is larger than 64 KiB")
        } catch is DecodingError {
            throw ServiceHTTPError(status: .badRequest, message: "the body is not a JSON object of the settings this request takes")
        } catch let error as any HTTPResponseError {
            throw error
        } catch {
            throw ServiceHTTPError(status: .internalServerError, message: "\(error)")
        }
    }

    /// A refusal's response: its status, and `{"error": …}` in one line.
    static func response(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: JSONBody(error: line).text + "\n")))
    }
}

/// A refusal of the HTTP layer itself (Host, token, Origin, body).
struct ServiceHTTPError: HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String
    var headers: HTTPFields = [:]

    func response(from request: Request, context: some RequestContext) throws -> Response {
        ErrorMiddleware.response(status, message, headers: headers)
    }
}

/// The service's refusals answer with the status of their kind.
extension ServiceError: HTTPResponseError {
    package var status: HTTPResponse.Status {
        switch kind {
        case .badRequest: return .badRequest
        case .notFound: return .notFound
        case .conflict: return .conflict
        case .tooMany: return .tooManyRequests
        case .unavailable: return .serviceUnavailable
        case .failed: return .internalServerError
        }
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        ErrorMiddleware.response(status, message)
    }

    static func http(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> ServiceHTTPError {
        ServiceHTTPError(status: status, message: message, headers: headers)
    }
}
