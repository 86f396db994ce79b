import Foundation
import Testing

/// `capctl serve`'s page (`GET /`): how it is served, and the page itself in a
/// browser. Tests/Service/page_check.py drives Debian's headless Chromium over
/// the DevTools protocol (its header says what it checks): the live view, a
/// recording through the page's buttons, a marker, a photo, the torch, the
/// file list, and the token. These tests check what the page asked of the
/// service on the service's side: its events and the file it wrote.
/// Screenshots are kept in .build/test-output/ (their paths are printed).
@Suite(.serialized) struct ServicePageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let chromium = "/usr/bin/chromium"
    /// Where the screenshots go, in the package's build folder.
    static let output = root.appendingPathComponent(".build/test-output")

    /// A folder of the test's own, removed with it.
    final class Scratch {
        let path: String
        init() throws {
            var template = Array((NSTemporaryDirectory() + "/capctl-page-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            path = String(cString: made)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// What the driver printed and its exit status; its lines are printed too.
    struct DriverRun {
        let status: Int32
        let output: String
        var failures: [Substring] { output.split(separator: "\n").filter { $0.hasPrefix("FAIL ") } }
        /// The `RESULT {json}` line's object.
        var result: [String: Any] {
            guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }) else { return [:] }
            return jsonObject(String(line.dropFirst(7))) ?? [:]
        }
        var summary: String {
            "page_check.py exited with \(status):\n" + (failures.isEmpty ? String(output.suffix(3000)) : failures.joined(separator: "\n"))
        }
    }

    static func drive(_ arguments: [String]) throws -> DriverRun {
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        return try runScript("page_check.py", ["--chromium", chromium, "--out", output.path] + arguments)
    }

    /// Runs `Tests/Service/SCRIPT` with Debian's python3: what it printed (also printed here,
    /// each line after the script's name) and its exit status.
    static func runScript(_ script: String, _ arguments: [String]) throws -> DriverRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("Tests/Service/\(script)").path] + arguments
        process.currentDirectoryURL = root
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("capctl-\(script)-\(UUID().uuidString).log")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        let text = try String(contentsOf: log, encoding: .utf8)
        print(text.split(separator: "\n").map { "\(script.replacingOccurrences(of: ".py", with: "")): \($0)" }.joined(separator: "\n"))
        return DriverRun(status: process.terminationStatus, output: text)
    }

    // MARK: Served

    @Test func thePageIsServedWithAStrictPolicyAndNoOutsideAsset() throws {
        let service = try ServiceFixture(["--video", "test-pattern"])
        let page = try service.request("GET", "/")
        #expect(page.status == 200)
        #expect(page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["cache-control"] == "no-store")
        #expect(page.headers["x-content-type-options"] == "nosniff")
        #expect(Int(page.headers["content-length"] ?? "") == page.body.count)
        let policy = try #require(page.headers["content-security-policy"])
        for directive in ["default-src 'self'", "img-src 'self' blob: data:", "connect-src 'self'", "object-src 'none'",
                          "frame-ancestors 'none'", "base-uri 'none'"] {
            #expect(policy.contains(directive), "\(directive) in \(policy)")
        }
        #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "\(policy)")
        // The nonce the policy names is the one on the page's script and style, and each response has its own.
        let nonce = try #require(policy.firstMatch(of: /script-src 'nonce-([0-9a-f]{32})'/)?.output.1)
        #expect(policy.contains("style-src 'nonce-\(nonce)'"))
        let html = page.text
        #expect(html.contains("<script nonce=\"\(nonce)\">") && html.contains("<style nonce=\"\(nonce)\">"))
        #expect(html.components(separatedBy: "<script").count == 2, "one script, inline")
        #expect(!html.contains("__CSP_NONCE__"))
        let again = try service.request("GET", "/")
        #expect(again.headers["content-security-policy"]?.contains(String(nonce)) == false, "a nonce is used once")
        // Nothing from elsewhere: no URL with a scheme or a protocol-relative one, and an icon of its own.
        #expect(!html.contains("http://") && !html.contains("https://") && !html.contains("\"//") && !html.contains("'//"))
        #expect(html.contains("<link rel=\"icon\" href=\"data:,\">"))
        #expect(html.contains("<meta name=\"viewport\""))
        // No other path answers the page.
        #expect(try service.request("GET", "/index.html").status == 404)
    }

    @Test func thePageIsServedWithoutTheTokenAndNothingElseIs() throws {
        let scratch = try Scratch()
        let tokenFile = scratch.path + "/token"
        #expect(FileManager.default.createFile(atPath: tokenFile, contents: Data("page-token-0123456789\n".utf8),
                                               attributes: [.posixPermissions: 0o600]))
        let service = try ServiceFixture(["--video", "test-pattern", "--token-file", tokenFile])
        let page = try service.request("GET", "/")
        #expect(page.status == 200, "the page holds no data and asks for the token itself")
        #expect(page.text.contains("id=\"token-form\""))
        #expect(try service.request("GET", "/session").status == 401)
        #expect(try service.request("GET", "/openapi.json").status == 401)
        #expect(try service.request("GET", "/?x=1").status == 200)
        #expect(try service.request("POST", "/", json: "{}").status == 401, "only GET / goes without the token")
        #expect(try service.request("GET", "/files/").status == 401)
    }

    // MARK: In a browser

    /// Eight cameras (small test patterns) live at once over WebRTC, each view marked so, with
    /// the microphone's sound on request; and a view whose WebRTC is refused falls back to MJPEG.
    @Test(.timeLimit(.minutes(3))) func thePageShowsEightCamerasLiveOverWebRTCWithSound() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.chromium), "no \(Self.chromium): apt-get install chromium")
        let cameras = (0..<8).flatMap { _ in ["--video", "test-pattern,size=320x240,fps=15"] }
        let service = try ServiceFixture(cameras + ["--audio", "test-tone"], startTimeout: 60)
        let run = try Self.drive(["--url", service.url + "/", "--webrtc", "--cameras", "8"])
        #expect(run.status == 0 && run.failures.isEmpty, "\(run.summary)")
        #expect(run.result["pictures"] as? Int == 8, "\(run.result)")
        // The service's side: a viewer of each camera, with the microphone.
        let joined = service.events.filter { $0["event"] as? String == "viewer-joined" }
        #expect(Set(joined.compactMap { $0["camera"] as? String }) == Set((0..<8).map(String.init)), "\(joined)")
        #expect(joined.allSatisfy { $0["microphone"] as? String == "8" }, "\(joined)")
        #expect(service.stop() == 0)
    }

    @Test(.timeLimit(.minutes(2))) func thePageDrivesTheService() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.chromium), "no \(Self.chromium): apt-get install chromium")
        // Without WebRTC, as a service where GStreamer's is missing: the views are MJPEG (the WebRTC views are checked below).
        let service = try ServiceFixture(["--video", "test-pattern", "--audio", "test-tone", "--no-webrtc"])
        let marker = "marked from the page"
        let run = try Self.drive(["--url", service.url + "/", "--record-file", "page-check.mp4", "--marker", marker])
        #expect(run.status == 0 && run.failures.isEmpty, "\(run.summary)")
        #expect(run.output.contains("SCREENSHOT \(Self.output.path)/page.png"))

        // What the page asked reached the service.
        let recording = try #require(run.result["recording"] as? String, "no recording: \(run.summary)")
        let markers = service.events("marker", recording: recording)
        #expect(markers.count == 1 && markers.first?["title"] as? String == marker, "\(markers)")
        #expect(service.events("paused", recording: recording).count == 1)
        #expect(service.events("resumed", recording: recording).count == 1)
        let finished = try #require(service.waitForEvent("finished", recording: recording, seconds: 5))
        #expect(finished["reason"] as? String == "stopped", "\(finished)")
        #expect(finished["files"] as? [String] == ["page-check.mp4"])
        let photos = service.events("photo")
        #expect(photos.count == 1 && photos.first?["camera"] as? String == "0", "\(photos)")
        #expect(run.result["torchPosts"] as? Int == 2)

        // The file plays: ffprobe reads the length the page's <video> read.
        let path = service.file("page-check.mp4")
        let probed = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height:format=duration",
                                             "-of", "default=noprint_wrappers=1", path])
        #expect(probed.status == 0)
        #expect(probed.stdout.contains("width=640") && probed.stdout.contains("height=480"), "\(probed.stdout)")
        let duration = probed.stdout.split(separator: "\n").first { $0.hasPrefix("duration=") }.flatMap { Double($0.dropFirst(9)) }
        #expect((duration ?? 0) > 1, "\(probed.stdout)")
        if let played = run.result["videoDuration"] as? Double, let duration {
            #expect(abs(played - duration) < 0.1, "the page played \(played) s of \(duration) s")
        }
    }

    @Test(.timeLimit(.minutes(2))) func theTokenIsAskedForOnceAndKept() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.chromium), "no \(Self.chromium): apt-get install chromium")
        let scratch = try Scratch()
        let token = "page-" + UUID().uuidString.lowercased()
        let tokenFile = scratch.path + "/token"
        #expect(FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8),
                                               attributes: [.posixPermissions: 0o600]))
        let service = try ServiceFixture(["--video", "test-pattern", "--audio", "test-tone", "--token-file", tokenFile, "--no-webrtc"])
        let run = try Self.drive(["--url", service.url + "/", "--token", token])
        #expect(run.status == 0 && run.failures.isEmpty, "\(run.summary)")
        #expect(run.output.contains("SCREENSHOT \(Self.output.path)/page-token.png"))
        // The photo of its button (in the answer) and the one another client wrote.
        #expect(service.events("photo").count == 2, "\(service.events("photo"))")
        #expect(service.files.contains("token-shot.jpg"))
    }

    /// Over HTTPS (HTTP/2): eight cameras' live views and the event stream at once with a view
    /// credential, which sees no record or delete button; a view link's page of one camera; and, as
    /// admin, a file name with markup shown as text (Tests/Service/page_roles.py says what it checks).
    @Test(.timeLimit(.minutes(3))) func overHTTPSEightCamerasAreLiveAndThePageShowsWhatTheRoleAllows() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.chromium), "no \(Self.chromium): apt-get install chromium")
        let certificates = try TestCertificates()
        let access = try TestCredentials([("viewer", "view", []), ("root", "admin", [])])
        let cameras = (0..<8).flatMap { _ in ["--video", "test-pattern,size=320x240,fps=10"] }
        let service = try ServiceFixture(cameras + ["--no-webrtc", "--access-file", access.accessFile,
                                                    "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile],
                                         caFile: certificates.caFile)
        let markup = #"<img src=x onerror="window.__capctlMarkupRan=true">.txt"#
        try Data("markup".utf8).write(to: URL(fileURLWithPath: service.file(markup)))
        try FileManager.default.createDirectory(at: Self.output, withIntermediateDirectories: true)
        let run = try Self.runScript("page_roles.py", ["--chromium", Self.chromium, "--out", Self.output.path, "--url", service.url + "/",
                                                       "--spki", try certificates.spki(), "--viewer", access.secrets["viewer"]!,
                                                       "--admin", access.secrets["root"]!, "--cameras", "8", "--markup-file", markup])
        #expect(run.status == 0 && run.failures.isEmpty, "\(run.summary)")
        #expect(run.result["allLiveSeconds"] as? Double != nil, "\(run.summary)")
        #expect(service.files.contains(markup))
    }
}
