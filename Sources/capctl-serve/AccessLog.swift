import CapctlCommands
import CapctlService
import CaptureKit
import Hummingbird
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The access log: one line per request, to stderr or --access-log's file:
/// time, client, method, path, status, response bytes (when known) and milliseconds.
/// A token in the path's query is written as `access_token=REDACTED`.
final class AccessLog: Sendable {
    private let descriptor: Int32
    private let lock = Mutex(())
    /// Responses logged so far, by status code (for GET /metrics).
    private let statusCounts = Mutex<[Int: Int]>([:])

    init(path: String?) throws {
        guard let path else {
            descriptor = STDERR_FILENO
            return
        }
        do throws(SystemCallError) {
            descriptor = try Posix.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode: 0o640)
        } catch {
            throw CommandFailure("--access-log \(path): \(error.reason)", status: .cannotCreate)
        }
    }

    func write(client: String, method: String, path: String, status: Int, bytes: Int?, milliseconds: Double) {
        statusCounts.withLock { $0[status, default: 0] += 1 }
        let target = Self.printable(AccessTokenRedaction.redacting(path))
        let line = "\(EventTime.now()) \(client) \"\(method) \(target)\" \(status) \(bytes.map(String.init) ?? "-") "
            + Self.decimal(milliseconds) + "ms\n"
        lock.withLock { _ in
            var bytes = Array(line.utf8)
            while !bytes.isEmpty {
                guard let written = try? Posix.write(descriptor, bytes, path: "access log"), written > 0 else { return }
                bytes.removeFirst(written)
            }
        }
    }

    /// How many responses of each status code have been logged, lowest code first.
    var responsesByStatus: [(status: Int, count: Int)] {
        statusCounts.withLock { $0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// A path as it may be written in one line: control characters and quotes escaped.
    private static func printable(_ path: String) -> String {
        var result = ""
        for scalar in path.unicodeScalars.prefix(2048) {
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" || scalar == "\\" {
                result += "\\x" + String(scalar.value, radix: 16)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func decimal(_ milliseconds: Double) -> String {
        let tenths = Int((milliseconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// Writes each request's line once its response is made (a streamed body's
/// length is not known then: "-").
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let log: AccessLog

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let client = context.remoteAddress?.ipAddress ?? "-"
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // A refusal makes its own response; it is logged as it goes out.
            response = try error.response(from: request, context: context)
        }
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        log.write(client: client, method: request.method.rawValue, path: request.uri.description, status: response.status.code,
                  bytes: response.body.contentLength, milliseconds: milliseconds)
        return response
    }
}
