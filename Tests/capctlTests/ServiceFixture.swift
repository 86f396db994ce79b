import Foundation
import Synchronization

/// A running `capctl serve` for a test: started on 127.0.0.1 with a free port
/// (read from its first stdout line, `service-started`) and a folder of its
/// own (`--dir`), asked with curl, and stopped with SIGTERM. Its stdout
/// events are collected as they come, so a test can wait for one.
final class ServiceFixture {
    /// The service's folder (--dir), removed with the fixture.
    let folder: String
    let port: Int
    /// `http`, or `https` for a service started with --tls-cert (its service-started event says which).
    let scheme: String
    /// The certificate authority curl trusts for HTTPS.
    let caFile: String?
    private let process: Process
    private let output: EventLines

    /// A service with these devices (and any further options), with these variables added to its environment.
    init(_ arguments: [String] = ["--video", "test-pattern", "--audio", "test-tone"], startTimeout: Double = 20,
         environment: [String: String] = [:], caFile: String? = nil) throws {
        self.caFile = caFile
        var template = Array((NSTemporaryDirectory() + "/capctl-serve-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        folder = String(cString: made)
        let process = Process()
        process.executableURL = CapctlRun.binary
        process.arguments = ["serve"] + arguments + ["--listen", "127.0.0.1:0", "--dir", folder]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        let lines = EventLines()
        out.fileHandleForReading.readabilityHandler = { handle in lines.append(handle.availableData) }
        try process.run()
        self.process = process
        output = lines
        guard let started = lines.wait(timeout: startTimeout, for: { $0["event"] as? String == "service-started" }),
              let port = started["port"] as? Int else {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: folder)
            throw ServiceFixtureError.notStarted(lines.text)
        }
        self.port = port
        scheme = started["scheme"] as? String ?? "http"
    }

    deinit {
        _ = stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Sends `signal` (SIGTERM unless told) and waits for the process to end;
    /// answers its exit status, or 128 + the signal that ended it.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    var isRunning: Bool { process.isRunning }
    /// The service's process (capctl serve execs capctl-serve, which keeps the PID).
    var pid: Int32 { process.processIdentifier }

    var url: String { "\(scheme)://127.0.0.1:\(port)" }

    /// One HTTP request with curl; `body` is sent as JSON, `headers` besides it. With `streamFor`,
    /// an endless answer (a live view, the events) is read for that many seconds, and its status kept.
    func request(_ method: String, _ path: String, json body: String? = nil, headers: [String: String] = [:],
                 streamFor seconds: Double? = nil) throws -> ServiceResponse {
        try start(method, path, json: body, headers: headers, streamFor: seconds).response()
    }

    /// A request whose answer is awaited later (`PendingRequest.response()`), while the test goes on.
    func start(_ method: String, _ path: String, json body: String? = nil, headers: [String: String] = [:],
               streamFor seconds: Double? = nil) throws -> PendingRequest {
        try PendingRequest(method: method, url: url + path, body: body, headers: headers, caFile: caFile, streamFor: seconds)
    }

    /// Every event the service printed so far, in order.
    var events: [[String: Any]] { output.events }

    /// The first event that meets `predicate`, waiting up to `timeout` seconds for it.
    func waitForEvent(timeout: Double = 30, _ predicate: @escaping ([String: Any]) -> Bool) -> [String: Any]? {
        output.wait(timeout: timeout, for: predicate)
    }

    /// The events named `name`, of recording `recording` if given, in order.
    func events(_ name: String, recording: String? = nil) -> [[String: Any]] {
        events.filter { $0["event"] as? String == name && (recording == nil || $0["recording"] as? String == recording) }
    }

    /// The first event named `name` (of `recording`), waiting up to `seconds` for it.
    func waitForEvent(_ name: String, recording: String? = nil, seconds: Double = 20) -> [String: Any]? {
        waitForEvent(timeout: seconds) { $0["event"] as? String == name && (recording == nil || $0["recording"] as? String == recording) }
    }

    /// The names of the files in the folder, sorted.
    var files: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() }

    func file(_ name: String) -> String { folder + "/" + name }
}

/// A curl running one request.
final class PendingRequest {
    private let process = Process()
    private let scratch = NSTemporaryDirectory() + "/capctl-curl-\(UUID().uuidString)"
    private let output = Pipe()
    let description: String
    private let streams: Bool

    init(method: String, url: String, body: String?, headers: [String: String] = [:], caFile: String? = nil,
         streamFor seconds: Double? = nil, curlOptions: [String] = []) throws {
        description = "\(method) \(url)"
        streams = seconds != nil
        // HEAD with --head: curl -X HEAD would wait for a body that never comes.
        var arguments = ["curl", "-s"] + (method == "HEAD" ? ["--head"] : ["-X", method])
            + ["-D", scratch + ".headers", "-o", scratch + ".body", "-w", "%{http_code} %{http_version}",
               "--max-time", seconds.map { String($0) } ?? "60"]
        if let caFile { arguments += ["--cacert", caFile] }
        arguments += curlOptions
        if let body {
            if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) { arguments += ["-H", "Content-Type: application/json"] }
            arguments += ["--data-binary", body]
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(name): \(value)"] }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments + [url]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(atPath: scratch + ".headers")
        try? FileManager.default.removeItem(atPath: scratch + ".body")
    }

    /// Waits for the answer.
    func response() throws -> ServiceResponse {
        let written = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: " ")
        process.waitUntilExit()
        // curl's 28: the time given ran out, as it does for an endless answer read for a while.
        let finished = process.terminationStatus == 0 || (streams && process.terminationStatus == 28)
        guard finished, let status = written.first.flatMap({ Int($0) }), status > 0 else {
            throw ServiceFixtureError.requestFailed(description, process.terminationStatus)
        }
        let headerText = (try? String(contentsOfFile: scratch + ".headers", encoding: .utf8)) ?? ""
        var headers: [String: String] = [:]
        for line in headerText.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let data = (try? Data(contentsOf: URL(fileURLWithPath: scratch + ".body"))) ?? Data()
        return ServiceResponse(status: status, headers: headers, body: data, httpVersion: written.count > 1 ? String(written[1]) : "",
                               endedByServer: process.terminationStatus == 0)
    }
}

/// One answer of the service.
struct ServiceResponse {
    let status: Int
    /// Header names in lower case.
    let headers: [String: String]
    let body: Data
    /// The HTTP version curl used: `1.1` or `2`.
    var httpVersion = ""
    /// Whether the answer ended before the time curl was given ran out (an endless one did not).
    var endedByServer = true

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, or an empty one.
    var json: [String: Any] { (try? object()) ?? [:] }

    /// The body as a JSON object.
    func object() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            throw ServiceFixtureError.notJSON(text)
        }
        return object
    }
}

enum ServiceFixtureError: Error, CustomStringConvertible {
    case notStarted(String)
    case requestFailed(String, Int32)
    case notJSON(String)

    var description: String {
        switch self {
        case .notStarted(let output): return "capctl serve did not start; it printed: \(output)"
        case .requestFailed(let request, let status): return "curl \(request) failed with status \(status)"
        case .notJSON(let text): return "not a JSON object: \(text)"
        }
    }
}

/// The service's stdout, collected from the pipe's reading thread and read by the test's.
private final class EventLines: Sendable {
    /// Bytes of a line not yet ended, and the lines so far.
    private let state = Mutex((partial: [UInt8](), lines: [String]()))

    func append(_ data: Data) {
        guard !data.isEmpty else { return }
        state.withLock { state in
            state.partial += data
            while let newline = state.partial.firstIndex(of: 10) {
                state.lines.append(String(decoding: state.partial[..<newline], as: UTF8.self))
                state.partial.removeSubrange(...newline)
            }
        }
    }

    /// Every line that is a JSON object, parsed.
    var events: [[String: Any]] {
        state.withLock { $0.lines }.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    var text: String { state.withLock { $0.lines.joined(separator: "\n") } }

    func wait(timeout: Double, for predicate: ([String: Any]) -> Bool) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = events.first(where: predicate) { return found }
            usleep(20_000)
        }
        return events.first(where: predicate)
    }
}

/// A JSON object written as text, or nil.
func jsonObject(_ text: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
}
