import Foundation
import Synchronization

/// `capctl serve` started by a test on 127.0.0.1 (a free port the service
/// picks), with a folder of its own; its stdout events are collected, and
/// requests go through curl, a real HTTP client.
final class RunningService {
    let folder: URL
    let port: Int
    let stderrFile: URL
    private let process: Process
    private let lines = LineBuffer()
    private let reader: Thread

    /// Starts the service with `arguments` (devices and options; --listen and
    /// --dir are added) and waits for its `service-started` event.
    init(_ arguments: [String] = ["--video", "test-pattern", "--audio", "test-tone"], folder: URL? = nil) throws {
        let folder = try folder ?? FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask,
                                                           appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()), create: true)
        self.folder = folder
        stderrFile = folder.deletingLastPathComponent().appendingPathComponent("serve-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        let process = Process()
        process.executableURL = CapctlRun.binary
        process.arguments = ["serve"] + arguments + ["--listen", "127.0.0.1:0", "--dir", folder.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        try process.run()
        self.process = process
        let lines = self.lines
        let handle = out.fileHandleForReading
        reader = Thread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lines.append(line)
                }
            }
        }
        reader.start()
        var found: Int?
        let deadline = Date().addingTimeInterval(20)
        while found == nil && Date() < deadline && process.isRunning {
            found = lines.all.lazy.compactMap(Self.object).first { $0["event"] as? String == "service-started" }?["port"] as? Int
            if found == nil { usleep(20_000) }
        }
        guard let found else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let stderr = (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
            throw ServiceTestFailure(message: "the service did not start: \(stderr)")
        }
        port = found
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// What curl got: the status and the body.
    struct Reply {
        let status: Int
        let body: String
        var json: [String: Any] { RunningService.object(body) ?? [:] }
    }

    /// One request through curl.
    @discardableResult
    func request(_ method: String, _ path: String, body: String? = nil, headers: [String] = []) throws -> Reply {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        var arguments = ["-s", "-S", "-X", method, "-w", "\n%{http_code}", "--max-time", "30"]
        for header in headers { arguments += ["-H", header] }
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        curl.arguments = arguments + [url + path]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let split = text.lastIndex(of: "\n"), let status = Int(text[text.index(after: split)...]) else {
            throw ServiceTestFailure(message: "curl \(method) \(path) got no status: \(text)")
        }
        return Reply(status: status, body: String(text[..<split]))
    }

    /// The events the service printed so far, as JSON objects.
    var events: [[String: Any]] { lines.all.compactMap(Self.object) }

    /// The events named `name`, of recording `recording` if given.
    func events(_ name: String, recording: String? = nil) -> [[String: Any]] {
        events.filter { $0["event"] as? String == name && (recording == nil || $0["recording"] as? String == recording) }
    }

    /// Waits (at most `seconds`) for an event named `name` of `recording`.
    func waitForEvent(_ name: String, recording: String? = nil, seconds: Double = 20) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let event = events(name, recording: recording).first { return event }
            usleep(20_000)
        }
        return nil
    }

    /// Sends `signal` and waits for the process to end; answers its exit status.
    func stop(signal: Int32 = SIGTERM, seconds: Double = 30) -> Int32 {
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        reader.cancel()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    var isRunning: Bool { process.isRunning }

    var stderr: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    static func object(_ line: String) -> [String: Any]? {
        guard let data = line.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}

struct ServiceTestFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Lines a reader thread appends while the test reads them.
private final class LineBuffer: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    var all: [String] { lines.withLock { $0 } }
}
