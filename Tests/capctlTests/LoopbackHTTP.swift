import Foundation
import Glibc

/// One HTTP/1.1 exchange over a TCP connection of its own to 127.0.0.1, its
/// request written byte for byte as given: a header twice, a body with any
/// Content-Type or none, a target no client would send. curl folds or adds
/// such headers itself, so the service's answers to them are asked for here.
enum LoopbackHTTP {
    /// Sends `method target` with `headers` in their order (`Connection: close`
    /// is added) and `body` (its Content-Length is added), and reads the answer.
    static func request(port: Int, _ method: String, _ target: String, headers: [(name: String, value: String)],
                        body: String? = nil, timeout: Double = 30) throws -> ServiceSecurityFixture.Answer {
        var text = "\(method) \(target) HTTP/1.1\r\n"
        for header in headers { text += "\(header.name): \(header.value)\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "Connection: close\r\n\r\n" + (body ?? "")
        return try exchange(port: port, Array(text.utf8), timeout: timeout)
    }

    /// Writes `bytes` to 127.0.0.1:`port` and reads one answer: until its
    /// Content-Length is read or the service closes the connection.
    static func exchange(port: Int, _ bytes: [UInt8], timeout: Double = 30) throws -> ServiceSecurityFixture.Answer {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw failure("socket") }
        defer { close(socketFD) }
        // A service that answers nothing fails the read after `timeout`, not the test run.
        var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw failure("connect to 127.0.0.1:\(port)") }
        var unsent = bytes[...]
        while !unsent.isEmpty {
            let written = unsent.withUnsafeBytes { send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw failure("send") }
            unsent = unsent.dropFirst(written)
        }

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while !isComplete(received) {
            let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw failure("no complete answer within \(timeout) s; read \(received.count) bytes") }
            received += buffer[..<count]
        }
        return try parse(received)
    }

    private static let headEnd: [UInt8] = Array("\r\n\r\n".utf8)

    /// Whether `received` holds a whole answer: its head and as many body bytes as its Content-Length.
    private static func isComplete(_ received: [UInt8]) -> Bool {
        guard let end = received.firstRange(of: headEnd) else { return false }
        let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
        guard let length = fields(of: head)["content-length"].flatMap({ Int($0) }) else { return false }
        return received.count - end.upperBound >= length
    }

    private static func parse(_ received: [UInt8]) throws -> ServiceSecurityFixture.Answer {
        guard let end = received.firstRange(of: headEnd) else {
            throw ServerFailure(message: "not an HTTP answer: \(String(decoding: received, as: UTF8.self))")
        }
        let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw ServerFailure(message: "not an HTTP status line: \(statusLine)")
        }
        return ServiceSecurityFixture.Answer(status: status, headers: fields(of: head), body: Data(received[end.upperBound...]))
    }

    /// The header fields of an answer's head, by lowercased name.
    private static func fields(of head: String) -> [String: String] {
        var found: [String: String] = [:]
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            found[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return found
    }

    private static func failure(_ what: String) -> ServerFailure {
        ServerFailure(message: "\(what): \(String(cString: strerror(errno)))")
    }
}
