import Hummingbird
import NIOCore

extension ServiceRouter {
    /// `GET /`: the service's page (Page/index.html, compiled into the binary):
    /// live views, recordings, photos, torch and controls, files. It holds no
    /// data of its own and asks the API for everything, with the token when the
    /// service has one, so it is served without the token (RequestGuardMiddleware).
    static func addPageRoutes(to router: Router<ServiceRequestContext>) {
        let page = ServicePage(PackageResources.index_html)
        router.get("/") { _, _ in page.response() }
    }
}

/// The page's bytes, split where each response puts its Content-Security-Policy nonce.
struct ServicePage: Sendable {
    /// What index.html writes where the nonce goes (`<script nonce="__CSP_NONCE__">`).
    static let placeholder = Array("__CSP_NONCE__".utf8)

    /// The page between the placeholders.
    let parts: [[UInt8]]

    init(_ bytes: [UInt8]) {
        var parts: [[UInt8]] = []
        var start = 0, index = 0
        let mark = Self.placeholder
        while index + mark.count <= bytes.count {
            if bytes[index] == mark[0] && Array(bytes[index..<(index + mark.count)]) == mark {
                parts.append(Array(bytes[start..<index]))
                index += mark.count
                start = index
            } else {
                index += 1
            }
        }
        parts.append(Array(bytes[start...]))
        self.parts = parts
    }

    /// The page with a fresh nonce, and the headers that keep it to itself: only
    /// its own inline style and script run (those carrying the nonce), every other
    /// request goes to the service itself, no other site may frame it, and no
    /// cache keeps it.
    func response() -> Response {
        let nonce = Self.nonce()
        var buffer = ByteBuffer()
        buffer.reserveCapacity(parts.reduce(0) { $0 + $1.count } + (parts.count - 1) * nonce.utf8.count)
        for (index, part) in parts.enumerated() {
            if index > 0 { buffer.writeString(nonce) }
            buffer.writeBytes(part)
        }
        let policy = "default-src 'self'; script-src 'nonce-\(nonce)'; style-src 'nonce-\(nonce)'; img-src 'self' blob: data:; "
            + "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8",
            .cacheControl: "no-store",
            .contentSecurityPolicy: policy,
            .xContentTypeOptions: "nosniff",
            .contentLength: String(buffer.readableBytes),
        ]
        if let referrerPolicy = HTTPFields.Element.Name("Referrer-Policy") { headers[referrerPolicy] = "no-referrer" }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: buffer))
    }

    /// 128 random bits in hex (hex digits are base64 characters, as a nonce's must be).
    static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64, low = generator.next() as UInt64
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(high) + hex(low)
    }
}
