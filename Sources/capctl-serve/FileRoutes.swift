import CapctlCommands
import CapctlService
import Hummingbird

extension ServiceRouter {
    /// `/files`: the folder's files, one of them (with ranges), and deleting one.
    static func addFileRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing) {
        let fileIO = FileIO()
        router.get("files") { _, _ in json(service.fileList()) }
        router.get("files/**") { request, context in
            let name = try fileName(context)
            let file = try service.file(named: name)
            return try await send(file, request: request, context: context, fileIO: fileIO)
        }
        router.head("files/**") { request, context in
            let name = try fileName(context)
            let file = try service.file(named: name)
            var response = try await send(file, request: request, context: context, fileIO: fileIO)
            // The headers GET would send, Content-Length included (setting an empty body sets it to 0).
            let length = response.headers[.contentLength]
            response.body = .init()
            response.headers[.contentLength] = length
            return response
        }
        router.delete("files/**") { _, context in
            let name = try fileName(context)
            return json(try service.deleteFile(named: name))
        }
    }

    /// The NAME of `/files/NAME`, percent-decoded once (the page encodes each part of
    /// a name), for the folder's rules to check as they check any other name.
    private static func fileName(_ context: ServiceRequestContext) throws -> String {
        let encoded = context.parameters.getCatchAll().joined(separator: "/")
        do {
            return try PercentDecoding.decode(encoded)
        } catch PercentDecoding.Failure.malformedEscape {
            throw ServiceError.http(.badRequest,
                                    "the file name in the path is not percent-encoded right: each '%' must be followed by two hexadecimal digits")
        } catch PercentDecoding.Failure.notUTF8 {
            throw ServiceError.http(.badRequest, "the file name in the path is not percent-encoded UTF-8 text")
        }
    }

    /// The file, or the one range of it the request asks for (RFC 9110 §14).
    private static func send(_ file: (path: String, bytes: Int64), request: Request, context: ServiceRequestContext,
                             fileIO: FileIO) async throws -> Response {
        let type = contentType(file.path)
        // A JSON file (a raw photo's description) is small, and a range of it is no JSON
        // document: it is always sent whole, as RFC 9110 lets a server ignore Range.
        let takesRanges = type != "application/json"
        var headers: HTTPFields = [.acceptRanges: takesRanges ? "bytes" : "none", .contentType: type]
        let size = Int(file.bytes)
        if takesRanges, let header = request.headers[.range] {
            switch ByteRange.parse(header, size: size) {
            case .some(.satisfiable(let range)):
                headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
                headers[.contentLength] = String(range.count)
                let body = try await fileIO.loadFile(path: file.path, range: range, context: context)
                return Response(status: .partialContent, headers: headers, body: body)
            case .some(.unsatisfiable):
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            case .none:
                break // Not a single byte range: the whole file, as RFC 9110 allows.
            }
        }
        headers[.contentLength] = String(size)
        let body = size > 0 ? try await fileIO.loadFile(path: file.path, range: 0...(size - 1), context: context) : ResponseBody()
        return Response(status: .ok, headers: headers, body: body)
    }

    private static func contentType(_ path: String) -> String {
        let types = ["mp4": "video/mp4", "m4a": "audio/mp4", "mov": "video/quicktime", "mkv": "video/x-matroska",
                     "webm": "video/webm", "ts": "video/mp2t", "wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg",
                     "opus": "audio/ogg", "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "json": "application/json"]
        let suffix = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return types[suffix] ?? "application/octet-stream"
    }
}

/// One range of a `Range: bytes=…` header.
enum ByteRange: Equatable {
    case satisfiable(ClosedRange<Int>)
    case unsatisfiable

    /// The range a header asks of a file of `size` bytes; nil when the header is
    /// not one byte range (it is then ignored).
    static func parse(_ header: String, size: Int) -> ByteRange? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: " ")
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            // bytes=-N: the last N bytes.
            guard let suffix = Int(parts[1]), suffix >= 0 else { return nil }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, size - suffix)...(size - 1))
        }
        guard let first = Int(parts[0]), first >= 0 else { return nil }
        let last: Int
        if parts[1].isEmpty {
            last = size - 1
        } else {
            guard let value = Int(parts[1]), value >= first else { return nil }
            last = min(value, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .satisfiable(first...last)
    }
}

private extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        drop { $0 == set }.reversed().drop { $0 == set }.reversed().reduce(into: "") { $0.append($1) }
    }
}
