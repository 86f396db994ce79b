import CapctlCommands
import CapctlService
import FoundationEssentials
import Hummingbird
import NIOCore

/// Turns every failure into a response with a one-line JSON reason,
/// `{"error": "…"}`: the service's refusals, the router's (no such path or
/// method), and bodies too large or malformed. Nothing else escapes as a 500
/// without saying what happened.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ServiceHTTPError {
            return Self.response(error.status, error.message, headers: error.headers)
        } catch let error as ServiceError {
            return Self.response(Self.status(error.kind), error.message)
        } catch let error as HTTPError {
            let message: String
            switch error.status {
            case .notFound: message = "no such path: \(request.uri.path); GET /openapi.json describes the API"
            case .methodNotAllowed: message = "\(request.method) is not taken on \(request.uri.path)"
            case .contentTooLarge: message = "the request body is larger than 64 KiB"
            default: message = error.body ?? error.status.reasonPhrase
            }
            return Self.response(error.status, message, headers: error.headers)
        } catch is NIOTooManyBytesError {
            // A body collected up to the context's limit (64 KiB) that goes on.
            return Self.response(.contentTooLarge, "the request body is larger than 64 KiB")
        } catch is DecodingError {
            return Self.response(.badRequest, "the body is not a JSON object of the settings this request takes")
        } catch {
            return Self.response(.internalServerError, "\(error)")
        }
    }

    static func status(_ kind: ServiceError.Kind) -> HTTPResponse.Status {
        switch kind {
        case .badRequest: return .badRequest
        case .notFound: return .notFound
        case .conflict: return .conflict
        case .tooMany: return .tooManyRequests
        case .unavailable: return .serviceUnavailable
        case .failed: return .internalServerError
        }
    }

    static func response(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: JSONBody(error: line).text + "\n")))
    }
}

/// A refusal of the HTTP layer itself (Host, token, Origin, body).
struct ServiceHTTPError: Error {
    let status: HTTPResponse.Status
    let message: String
    var headers: HTTPFields = [:]
}

extension ServiceError {
    static func http(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> ServiceHTTPError {
        ServiceHTTPError(status: status, message: message, headers: headers)
    }
}
