import Foundation
import Testing

/// `capctl serve`'s guards, against the real binary on 127.0.0.1: the token,
/// Host and Origin rules, names that would lead out of --dir, the refusals
/// at start (a token file others can read, a non-loopback address without a
/// token, a port in use), the body limit and files that exist. Every refusal
/// is a JSON error and changes nothing.
@Suite struct ServiceSecurityTests {
    static let token = "capctl-test-token-0123456789abcdef"

    // MARK: Token

    @Test func aTokenIsNeededAndOnlyTheRightOne() throws {
        let service = try ServiceSecurityFixture(token: Self.token)
        defer { service.stop() }

        let none = try service.request("GET", "/session")
        #expect(none.status == 401)
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(none.headers)")
        #expect(none.errorMessage?.contains("credential") == true, "\(none.text)")

        #expect(try service.request("GET", "/session", headers: ["Authorization": "Bearer \(Self.token)"]).status == 200)
        #expect(try service.request("GET", "/session", headers: ["Authorization": "Bearer \(Self.token)x"]).status == 401)
        #expect(try service.request("GET", "/session", headers: ["Authorization": "Bearer wrong-token-of-the-same-len"]).status == 401)
        #expect(try service.request("GET", "/session", headers: ["Authorization": "Basic \(Self.token)"]).status == 401)
        #expect(try service.request("GET", "/openapi.json").status == 401)

        // access_token in the query: for GET only.
        #expect(try service.request("GET", "/session?access_token=\(Self.token)").status == 200)
        #expect(try service.request("GET", "/session?access_token=wrong\(Self.token)").status == 401)
        let post = try service.request("POST", "/recordings?access_token=\(Self.token)", json: #"{"file": "query.mp4"}"#)
        #expect(post.status == 401, "\(post.text)")
        FileManager.default.createFile(atPath: service.served + "/kept.txt", contents: Data("kept".utf8))
        let delete = try service.request("DELETE", "/files/kept.txt?access_token=\(Self.token)")
        #expect(delete.status == 401)
        #expect(FileManager.default.fileExists(atPath: service.served + "/kept.txt"))
        #expect(service.servedFiles == ["kept.txt"])
    }

    @Test func aTokenFileOthersCanReadIsRefusedAtStart() throws {
        let scratch = try ServiceSecurityFixture.Scratch()
        let tokenFile = scratch.path + "/token"
        try Data((Self.token + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: tokenFile)
        let result = try ServiceSecurityFixture.runToEnd(["--listen", "127.0.0.1:0", "--dir", scratch.path, "--token-file", tokenFile])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("--token-file") && result.stderr.contains("644"), "\(result.stderr)")
        #expect(!result.stdout.contains("service-started"))
    }

    @Test func listeningBeyondLoopbackWithoutATokenIsRefusedAtStart() throws {
        // Only the refusal is tested: nothing here ever listens beyond loopback.
        let scratch = try ServiceSecurityFixture.Scratch()
        let result = try ServiceSecurityFixture.runToEnd(["--listen", "0.0.0.0:0", "--dir", scratch.path])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("--token-file"), "\(result.stderr)")
        #expect(!result.stdout.contains("service-started"))
    }

    // MARK: Host and Origin

    @Test func theHostMustNameTheService() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let port = service.port

        for host in ["evil.example", "evil.example:\(port)", "cam.example:\(port)", "localhost.evil.example:\(port)"] {
            let answer = try service.request("GET", "/session", headers: ["Host": host])
            #expect(answer.status == 403, "Host \(host): \(answer.text)")
            #expect(answer.errorMessage != nil, "\(answer.text)")
        }
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST:\(port)"] {
            #expect(try service.request("GET", "/session", headers: ["Host": host]).status == 200, "Host \(host)")
        }

        let proxied = try ServiceSecurityFixture(extraArguments: ["--allow-host", "cam.example"])
        defer { proxied.stop() }
        #expect(try proxied.request("GET", "/session", headers: ["Host": "cam.example:\(proxied.port)"]).status == 200)
        #expect(try proxied.request("GET", "/session", headers: ["Host": "cam.example"]).status == 200)
        #expect(try proxied.request("GET", "/session", headers: ["Host": "other.example:\(proxied.port)"]).status == 403)
    }

    @Test func aChangeFromAnotherOriginIsRefusedAndMakesNothing() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let body = #"{"file": "origin.mp4", "maxDuration": 30}"#

        for origin in ["http://evil.example", "http://127.0.0.1:\(service.port + 1)", "https://localhost:\(service.port)", "null"] {
            let answer = try service.request("POST", "/recordings", headers: ["Origin": origin], json: body)
            #expect(answer.status == 403, "Origin \(origin): \(answer.text)")
            #expect(answer.errorMessage != nil)
        }
        #expect(service.servedFiles.isEmpty)
        let list = try service.request("GET", "/recordings")
        #expect(list.status == 200)
        #expect((list.json?["recordings"] as? [Any])?.isEmpty == true, "\(list.text)")

        // Reading from another page's Origin changes nothing, and is answered.
        #expect(try service.request("GET", "/session", headers: ["Origin": "http://evil.example"]).status == 200)

        // The service's own Origin may change things.
        let own = try service.request("POST", "/recordings", headers: ["Origin": "http://127.0.0.1:\(service.port)"], json: body)
        #expect(own.status == 201, "\(own.text)")
        #expect(own.header("Location") == "/recordings/rec-1")
        // A recording stopped before its first frame leaves no file: let it write one.
        usleep(500_000)
        let stop = try service.request("POST", "/recordings/rec-1/stop",
                                       headers: ["Origin": "http://localhost:\(service.port)", "Host": "localhost:\(service.port)"])
        #expect(stop.status == 200, "\(stop.text)")
        #expect(service.servedFiles == ["origin.mp4"])
    }

    // MARK: Names inside --dir

    @Test func namesCannotLeadOutOfTheFolder() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        // Beside --dir: a folder with a secret, reached from inside by two symbolic links.
        let outside = service.parent + "/outside"
        try FileManager.default.createDirectory(atPath: outside + "/26", withIntermediateDirectories: true)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/secret.txt"))
        try FileManager.default.createSymbolicLink(atPath: service.served + "/out", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: service.served + "/link.txt", withDestinationPath: outside + "/secret.txt")
        // A folder named like a month, leading out: strftime's %D would write month/day/year into it.
        let month = String(format: "%02d", Calendar(identifier: .gregorian).component(.month, from: Date()))
        try FileManager.default.createSymbolicLink(atPath: service.served + "/a" + month, withDestinationPath: outside)
        let before = ServiceSecurityFixture.listing(service.parent)

        for file in ["../escape.mp4", "../outside/escape.mp4", outside + "/escape.mp4", "/tmp/escape.mp4", "out/escape.mp4",
                     "./escape.mp4", "sub//escape.mp4", "a%D.mp4", "a%x.mp4", "%Y/escape.mp4", "out/%Y.mp4"] {
            let body = try ServiceSecurityFixture.jsonText(["file": file, "maxDuration": 5])
            let answer = try service.request("POST", "/recordings", json: body)
            #expect(answer.status == 400, "file \(file): \(answer.status) \(answer.text)")
            #expect(answer.errorMessage != nil)
        }
        for name in ["../outside/secret.txt", "..%2Foutside%2Fsecret.txt", "out/secret.txt", "link.txt",
                     "%2F" + outside.dropFirst().replacingOccurrences(of: "/", with: "%2F") + "%2Fsecret.txt",
                     "out/26/../secret.txt", "%2E%2E/outside/secret.txt"] {
            let get = try service.request("GET", "/files/" + name)
            #expect(get.status == 404 || get.status == 400, "GET /files/\(name): \(get.status) \(get.text)")
            #expect(!get.text.contains("secret") || get.errorMessage != nil, "GET /files/\(name) sent \(get.text)")
            let head = try service.request("HEAD", "/files/" + name)
            #expect(head.status == 404 || head.status == 400, "HEAD /files/\(name): \(head.status)")
            let delete = try service.request("DELETE", "/files/" + name)
            #expect(delete.status == 404 || delete.status == 400, "DELETE /files/\(name): \(delete.status) \(delete.text)")
        }
        #expect(try String(contentsOfFile: outside + "/secret.txt", encoding: .utf8) == "secret")
        #expect(ServiceSecurityFixture.listing(service.parent) == before)
        // The links are not files of the folder either.
        let files = try service.request("GET", "/files")
        #expect((files.json?["files"] as? [Any])?.isEmpty == true, "\(files.text)")
    }

    // MARK: Limits and conflicts

    @Test func aBodyOver64KiBIsRefused() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let padding = String(repeating: "x", count: 70 * 1024)
        let answer = try service.request("POST", "/recordings", json: #"{"file": "big.mp4", "metadata": ["comment=\#(padding)"]}"#)
        #expect(answer.status == 413, "\(answer.status) \(answer.text.prefix(300))")
        #expect(answer.errorMessage?.contains("64 KiB") == true, "\(answer.text.prefix(300))")
        #expect(service.servedFiles.isEmpty)
        #expect(try service.request("GET", "/session").status == 200)
    }

    @Test func aRecordingFileThatExistsIsAConflictAndStaysAsItWas() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let path = service.served + "/taken.mp4"
        try Data("not a movie".utf8).write(to: URL(fileURLWithPath: path))
        let old = Date(timeIntervalSince1970: 1_000_000_000)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path)

        let answer = try service.request("POST", "/recordings", json: #"{"file": "taken.mp4", "maxDuration": 5}"#)
        #expect(answer.status == 409, "\(answer.text)")
        #expect(answer.errorMessage?.contains("taken.mp4") == true, "\(answer.text)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "not a movie")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.modificationDate] as? Date == old)
        #expect(service.servedFiles == ["taken.mp4"])
        let list = try service.request("GET", "/recordings")
        #expect((list.json?["recordings"] as? [Any])?.isEmpty == true, "\(list.text)")
    }

    @Test func aTimeTooLargeForTheClockIsRefusedAndTheServiceRunsOn() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        for time in ["153722867280912930:59", "2562047788015215:59:59", "99999999999999999999"] {
            let answer = try service.request("POST", "/recordings", json: #"{"file": "long.mp4", "maxDuration": "\#(time)"}"#)
            #expect(answer.status == 400, "maxDuration \(time): \(answer.status) \(answer.text)")
        }
        #expect(service.isRunning)
        #expect(try service.request("GET", "/session").status == 200)
        #expect(service.servedFiles.isEmpty)
    }

    @Test func aSecondServiceOnTheSamePortIsRefused() throws {
        let first = try ServiceSecurityFixture()
        defer { first.stop() }
        let scratch = try ServiceSecurityFixture.Scratch()
        let second = try ServiceSecurityFixture.runToEnd(["--listen", "127.0.0.1:\(first.port)", "--dir", scratch.path])
        #expect(second.status == 69, "\(second.stderr)")
        #expect(second.stderrLines.count == 1, "\(second.stderr)")
        #expect(second.stderr.contains("in use"), "\(second.stderr)")
        #expect(!second.stdout.contains("service-started"), "\(second.stdout)")
        #expect(try first.request("GET", "/session").status == 200)
    }

    @Test func sigtermStopsTheServiceWithStatusZero() throws {
        let service = try ServiceSecurityFixture()
        let started = try service.request("POST", "/recordings", json: #"{"file": "term.mp4"}"#)
        #expect(started.status == 201, "\(started.text)")
        // Once it has media: a recording stopped before its first frame leaves no file.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let progress = try service.request("GET", "/recordings/rec-1").json?["progress"] as? [String: Any]
            if (progress?["frames"] as? Int ?? 0) > 0 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let status = service.stop()
        #expect(status == 0)
        #expect(service.stdout.split(separator: "\n").last?.contains("\"service-stopped\"") == true, "\(service.stdout.suffix(500))")
        // The recording was finished, as record finishes on SIGTERM.
        #expect(service.stdout.contains("\"finished\""), "\(service.stdout.suffix(1000))")
        #expect(service.servedFiles == ["term.mp4"])
    }
}

/// A `capctl serve` of the test pattern and tone on 127.0.0.1 (port 0), its
/// --dir a folder `served` inside a scratch folder of its own; requests go
/// through curl, which sends any Host and path as given.
final class ServiceSecurityFixture {

    /// A folder of a test's own, removed at the end.
    final class Scratch {
        let path: String
        init() throws {
            var template = Array((NSTemporaryDirectory() + "/capctl-serve-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            // The real path: answers name files by it.
            path = URL(fileURLWithPath: String(cString: made)).resolvingSymlinksInPath().path
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers[name.lowercased()] }
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }
        /// The one-line error every refusal carries, if this is one (with its JSON content type).
        var errorMessage: String? {
            guard header("Content-Type") == "application/json", let json, json.count == 1 else { return nil }
            return json["error"] as? String
        }
    }

    let scratch: Scratch
    var parent: String { scratch.path }
    var served: String { scratch.path + "/served" }
    let port: Int
    private let process: Process
    private let stdoutPath: String
    private var exitStatus: Int32?

    init(token: String? = nil, extraArguments: [String] = []) throws {
        scratch = try Scratch()
        try FileManager.default.createDirectory(atPath: scratch.path + "/served", withIntermediateDirectories: false)
        var arguments = ["serve", "--video", "test-pattern", "--audio", "test-tone", "--listen", "127.0.0.1:0",
                         "--dir", scratch.path + "/served"] + extraArguments
        if let token {
            let tokenFile = scratch.path + "/token"
            guard FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8),
                                                 attributes: [.posixPermissions: 0o600]) else { throw CocoaError(.fileWriteUnknown) }
            arguments += ["--token-file", tokenFile]
        }
        stdoutPath = scratch.path + "/stdout"
        FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        FileManager.default.createFile(atPath: scratch.path + "/stderr", contents: nil)
        process = Process()
        process.executableURL = CapctlRun.binary
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: scratch.path)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch.path + "/stderr"))
        try process.run()

        // service-started, with the port, is the first line on stdout.
        let deadline = Date().addingTimeInterval(60)
        var found: Int?
        while found == nil && Date() < deadline && process.isRunning {
            if let line = (try? String(contentsOfFile: stdoutPath, encoding: .utf8))?.split(separator: "\n").first,
               let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
               event["event"] as? String == "service-started" {
                found = event["port"] as? Int
            } else {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        guard let found else {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let stderr = (try? String(contentsOfFile: scratch.path + "/stderr", encoding: .utf8)) ?? ""
            Issue.record("capctl serve did not start: \(stderr)")
            throw CocoaError(.executableLoad)
        }
        port = found
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    var isRunning: Bool { process.isRunning }
    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

    /// The files in --dir (names inside it), hidden ones included.
    var servedFiles: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: served)) ?? []).sorted() }

    /// SIGTERM, then the exit status.
    @discardableResult
    func stop() -> Int32 {
        if let exitStatus { return exitStatus }
        process.terminate()
        process.waitUntilExit()
        exitStatus = process.terminationStatus
        return process.terminationStatus
    }

    /// One request through curl, its path sent as it is (no '..' folded away).
    /// Host is the listener's address unless `headers` names another.
    func request(_ method: String, _ path: String, headers: [String: String] = [:], json: String? = nil) throws -> Answer {
        let work = try Scratch()
        var arguments = ["-s", "-S", "--path-as-is", "--max-time", "60", "-o", work.path + "/body", "-D", work.path + "/headers",
                         "-w", "%{http_code}"]
        arguments += method == "HEAD" ? ["-I"] : ["-X", method]
        var all = ["Host": "127.0.0.1:\(port)"]
        all.merge(headers) { $1 }
        for (name, value) in all.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(name): \(value)"] }
        if let json {
            try Data(json.utf8).write(to: URL(fileURLWithPath: work.path + "/request"))
            arguments += ["-H", "Content-Type: application/json", "--data-binary", "@" + work.path + "/request"]
        }
        arguments.append("http://127.0.0.1:\(port)\(path)")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = arguments
        let out = Pipe()
        curl.standardOutput = out
        curl.standardError = FileHandle.nullDevice
        try curl.run()
        let code = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        var headerFields: [String: String] = [:]
        let headerText = (try? String(contentsOfFile: work.path + "/headers", encoding: .utf8)) ?? ""
        for line in headerText.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headerFields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = (try? Data(contentsOf: URL(fileURLWithPath: work.path + "/body"))) ?? Data()
        return Answer(status: Int(code) ?? 0, headers: headerFields, body: body)
    }

    /// capctl serve with `arguments` (after the devices) run until it exits by itself.
    static func runToEnd(_ arguments: [String]) throws -> CapctlRun {
        try CapctlRun.run(["serve", "--video", "test-pattern", "--audio", "test-tone"] + arguments)
    }

    /// Every path under `folder`, relative, with each file's size and each link's target
    /// (the service's own stdout and stderr, which grow, are left out).
    static func listing(_ folder: String) -> [String] {
        var found: [String] = []
        let manager = FileManager.default
        guard let walker = manager.enumerator(atPath: folder) else { return [] }
        while let name = walker.nextObject() as? String {
            if name == "stdout" || name == "stderr" { continue }
            let path = folder + "/" + name
            if let target = try? manager.destinationOfSymbolicLink(atPath: path) {
                found.append("\(name) -> \(target)")
            } else {
                let size = (try? manager.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
                found.append("\(name) \(size ?? -1)")
            }
        }
        return found.sorted()
    }

    static func jsonText(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
