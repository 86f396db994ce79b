import Foundation
import Testing

/// Roles, cameras and view links of `capctl serve`, against the real binary over HTTPS
/// (HTTP/2) on 127.0.0.1, with credentials made by `capctl serve --add-credential`.
@Suite struct ServiceAccessTests {
    /// A credential of each role over every camera, and of some roles over camera 1 only.
    static let credentials: [(name: String, role: String, cameras: [String])] = [
        ("viewer", "view", []), ("operator", "record", []), ("installer", "control", []), ("root", "admin", []),
        ("viewer-1", "view", ["1"]), ("operator-1", "record", ["1"]), ("installer-1", "control", ["1"]), ("root-1", "admin", ["1"]),
    ]

    /// Whether a role may call an operation that needs `needed` (every role may what view may; admin may all).
    static func allows(_ role: String, _ needed: String) -> Bool { role == "admin" || needed == "view" || needed == role }

    /// Every operation of the document, with every credential: allowed, or 403 exactly as the document's
    /// x-capctl-role and x-capctl-cameras say, each refusal one line that changes nothing (no file,
    /// no recording), counted by reason in /metrics; no answer ever holds a secret or a hash.
    @Test func everyOperationIsAllowedOrRefusedAsTheDocumentSays() throws {
        let certificates = try TestCertificates()
        let access = try TestCredentials(Self.credentials)
        let service = try ServiceFixture(["--video", "test-pattern,size=320x240,fps=10", "--video", "test-pattern,size=320x240,fps=10",
                                          "--audio", "test-tone", "--access-file", access.accessFile, "--link-key-file", access.linkKeyFile,
                                          "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile],
                                         caFile: certificates.caFile)
        defer { service.stop() }
        let kept = service.file("kept.txt")
        try Data("kept".utf8).write(to: URL(fileURLWithPath: kept))

        let document = try #require(try service.request("GET", "/openapi.json", headers: access.bearer("root")).object())
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let accessFile = try String(contentsOfFile: access.accessFile, encoding: .utf8)
        let hashes: [String] = accessFile.components(separatedBy: "\"").filter { $0.count == 64 && $0.allSatisfy(\.isHexDigit) }
        let linkKey = try String(contentsOfFile: access.linkKeyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let secrets = Array(Self.credentials.map { access.secrets[$0.name]! }) + hashes + [linkKey]
        #expect(hashes.count == Self.credentials.count)

        var expectedRefusals: [String: Int] = [:]
        var operations = 0
        for (path, item) in paths.sorted(by: { $0.key < $1.key }) {
            for (method, value) in item.sorted(by: { $0.key < $1.key }) {
                guard let operation = value as? [String: Any], let id = operation["operationId"] as? String else { continue }
                let role = try #require(operation["x-capctl-role"] as? String, "\(id) has no x-capctl-role")
                let cameras = try #require(operation["x-capctl-cameras"] as? String, "\(id) has no x-capctl-cameras")
                operations += 1
                for credential in Self.credentials {
                    let coversCamera0 = credential.cameras.isEmpty || credential.cameras.contains("0")
                    let roleAllows = Self.allows(credential.role, role)
                    let camerasAllow = cameras == "none" || (cameras == "every" ? credential.cameras.isEmpty : coversCamera0)
                    let isPublic = (operation["security"] as? [[String: Any]])?.allSatisfy(\.isEmpty) == true
                    let allowed = isPublic || (roleAllows && camerasAllow)
                    let call = Self.call(id, method: method.uppercased(), path: path, allowed: allowed)
                    let before = try Self.state(service, access)
                    let answer = try service.request(call.method, call.target, json: call.body,
                                                     headers: access.bearer(credential.name).merging(call.headers) { $1 },
                                                     streamFor: call.streams && allowed ? 1 : nil)
                    let what = "\(credential.name) (\(credential.role) of \(credential.cameras.isEmpty ? "every camera" : "camera 1")): \(call.method) \(call.target)"
                    #expect(answer.httpVersion == "2", "\(what): HTTP \(answer.httpVersion)")
                    for secret in secrets { #expect(!answer.text.contains(secret), "\(what) answered a secret or a hash") }
                    if allowed {
                        #expect(![401, 403].contains(answer.status), "\(what): \(answer.status) \(answer.text)")
                        if id == "deleteFile" { try Data("kept".utf8).write(to: URL(fileURLWithPath: kept)) }
                    } else {
                        #expect(answer.status == 403, "\(what): \(answer.status) \(answer.text)")
                        // A HEAD's refusal has no body to say why.
                        if call.method != "HEAD" {
                            let message = try #require(answer.json["error"] as? String, "\(what): \(answer.text)")
                            #expect(!message.contains("\n") && message.contains(credential.name), "\(what): \(message)")
                        }
                        #expect(try Self.state(service, access) == before, "\(what) changed something")
                        expectedRefusals[roleAllows ? "camera" : "role", default: 0] += 1
                    }
                }
            }
        }
        #expect(operations >= 25, "the document lists \(operations) operations")
        let metrics = try service.request("GET", "/metrics", headers: access.bearer("root")).text
        for reason in ["role", "camera"] {
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("capctl_http_refusals_total{reason=\"\(reason)\"}") }
            #expect(line.flatMap { Int($0.split(separator: " ").last ?? "") } == expectedRefusals[reason], "\(reason): \(line ?? "none")")
        }
    }

    /// A request for an operation: its path filled in, and a body that would change something if it were allowed
    /// (a refusal must change nothing), or one the handler refuses once past the access checks (so that an allowed
    /// call leaves nothing running).
    static func call(_ id: String, method: String, path: String, allowed: Bool)
        -> (method: String, target: String, body: String?, headers: [String: String], streams: Bool) {
        var target = path.replacingOccurrences(of: "{name}", with: "kept.txt").replacingOccurrences(of: "{viewer}", with: "no-such-viewer")
        target = target.replacingOccurrences(of: "{id}", with: path.hasPrefix("/recordings") ? "no-such-recording" : "0")
        var body: String?
        var headers: [String: String] = [:]
        switch id {
        case "liveView", "snapshot": target += "?camera=0&width=160"
        case "startRecording": body = allowed ? #"{"noSuchSetting": 1}"# : #"{"file": "refused.mp4", "maxDuration": "2s"}"#
        case "takePhotos": body = allowed ? #"{"camera": "0"}"# : #"{"camera": "0", "file": "refused.jpg"}"#
        case "setControls": body = #"{"brightness": 10}"#
        case "setTorch": body = #"{"on": true}"#
        case "addMarker": body = #"{"title": "refused"}"#
        case "createViewLink": body = #"{"camera": "0", "seconds": 60}"#
        case "startWebRTCView":
            body = "v=0\r\n"
            headers["Content-Type"] = "application/sdp"
        default: break
        }
        return (method, target, body, headers, ["liveView", "events"].contains(id))
    }

    /// What a refusal must leave as it was: the folder's files and their sizes, and the recordings.
    static func state(_ service: ServiceFixture, _ access: TestCredentials) throws -> [String] {
        let files = service.files.map { name in
            "\(name) \((try? FileManager.default.attributesOfItem(atPath: service.file(name))[.size] as? Int) ?? -1)"
        }
        let recordings = try service.request("GET", "/recordings", headers: access.bearer("root")).text
        return files + [recordings]
    }

    /// A view link: valid before its expiry; 401 after it, for another camera, with a byte changed, on an
    /// operation it does not stand for, and once the link key is replaced (SIGHUP); never in the access log.
    @Test func viewLinksEndAtTheirExpiryAndWithTheKey() throws {
        let access = try TestCredentials([("viewer", "view", []), ("viewer-0", "view", ["0"])])
        let log = access.folder + "/access.log"
        let service = try ServiceFixture(["--video", "test-pattern,size=320x240,fps=10", "--video", "test-pattern,size=320x240,fps=10",
                                          "--access-file", access.accessFile, "--link-key-file", access.linkKeyFile, "--access-log", log])
        defer { service.stop() }

        func link(_ body: String, as name: String = "viewer") throws -> String {
            let made = try service.request("POST", "/view-links", json: body, headers: access.bearer(name))
            #expect(made.status == 201, "\(made.text)")
            #expect(made.json["snapshot"] as? String == "/snapshot.jpg?camera=\(made.json["camera"] as? String ?? "")&link=\(made.json["link"] as? String ?? "")")
            return try #require(made.json["link"] as? String)
        }
        let short = try link(#"{"camera": "0", "seconds": 3}"#)
        let long = try link(#"{"camera": "0", "seconds": 600}"#)
        // A live view opened with the short link ends when the link does (curl's 20 s do not run out).
        let ending = try service.start("GET", "/stream.mjpg?camera=0&width=160&fps=5&link=\(short)", streamFor: 20)
        // A credential of camera 0 makes links of camera 0 only.
        #expect(try service.request("POST", "/view-links", json: #"{"camera": "1"}"#, headers: access.bearer("viewer-0")).status == 403)

        let snapshot = try service.request("GET", "/snapshot.jpg?camera=0&link=\(short)")
        #expect(snapshot.status == 200 && snapshot.headers["content-type"] == "image/jpeg", "\(snapshot.text)")
        let stream = try service.request("GET", "/stream.mjpg?camera=0&width=160&link=\(short)", streamFor: 1)
        #expect(stream.status == 200 && stream.text.contains("Content-Type: image/jpeg"))
        let page = try service.request("GET", "/access?link=\(short)")
        #expect(page.json["role"] as? String == "view" && page.json["cameras"] as? [String] == ["0"], "\(page.text)")

        // Another camera, given alone or after this one; a changed byte anywhere; an operation links do not stand for.
        #expect(try service.request("GET", "/snapshot.jpg?camera=1&link=\(short)").status == 401)
        #expect(try service.request("GET", "/snapshot.jpg?camera=0&camera=1&link=\(short)").status == 400)
        #expect(try service.request("GET", "/snapshot.jpg?camera=0&camera=1", headers: access.bearer("viewer-0")).status == 400)
        for index in [short.index(short.startIndex, offsetBy: 8), short.index(before: short.endIndex)] {
            var changed = short
            changed.replaceSubrange(index...index, with: short[index] == "A" ? "B" : "A")
            let answer = try service.request("GET", "/snapshot.jpg?camera=0&link=\(changed)")
            #expect(answer.status == 401, "\(changed): \(answer.text)")
        }
        let parts = short.split(separator: ".")
        let extended = "\(parts[0]).\(parts[1]).\(parts[2]).\(Int(parts[3])! + 3600).\(parts[4])"
        #expect(try service.request("GET", "/snapshot.jpg?camera=0&link=\(extended)").status == 401)
        #expect(try service.request("GET", "/recordings?link=\(short)").status == 401)
        #expect(try service.request("GET", "/events?link=\(short)").status == 401)

        // The view opened with the short link ends when the service finds it expired (curl's 20 s do not
        // run out); from then on the link is refused as expired, while the page is still served for it
        // (it says the link has ended).
        let ended = try ending.response()
        #expect(ended.status == 200 && ended.endedByServer && ended.text.contains("Content-Type: image/jpeg"), "the view outlived its link")
        let expired = try service.request("GET", "/snapshot.jpg?camera=0&link=\(short)")
        #expect(expired.status == 401 && (expired.json["error"] as? String ?? "").contains("expired"), "\(expired.text)")
        #expect(try service.request("GET", "/?link=\(short)").status == 200)
        // A credential of camera 0 sees camera 0's views alone in the session.
        let other = try service.start("GET", "/stream.mjpg?camera=1&width=160&fps=5", headers: access.bearer("viewer"), streamFor: 60)
        // Asked until the view is listed (each answer takes a curl's time), for at most 30 s.
        var seen: [String] = []
        let deadline = Date().addingTimeInterval(30)
        while seen.isEmpty && Date() < deadline {
            let session = try service.request("GET", "/session", headers: access.bearer("viewer"))
            seen = (session.json["views"] as? [[String: Any]] ?? []).compactMap { $0["camera"] as? String }
        }
        #expect(seen == ["1"])
        let scoped = try service.request("GET", "/session", headers: access.bearer("viewer-0"))
        #expect((scoped.json["views"] as? [[String: Any]])?.isEmpty == true, "\(scoped.text)")
        withExtendedLifetime(other) {}  // its curl is ended as it goes
        #expect(try service.request("GET", "/snapshot.jpg?camera=0&link=\(long)").status == 200)

        // A new key, read on SIGHUP, ends every link.
        let rotated = try CapctlRun.run(["serve", "--link-key-file", access.linkKeyFile, "--rotate-link-key"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        kill(service.pid, SIGHUP)
        #expect(service.waitForEvent("service-reloaded") != nil)
        #expect(try service.request("GET", "/snapshot.jpg?camera=0&link=\(long)").status == 401)
        let fresh = try link(#"{"camera": "0"}"#)
        #expect(try service.request("GET", "/snapshot.jpg?camera=0&link=\(fresh)").status == 200)

        let metrics = try service.request("GET", "/metrics", headers: access.bearer("viewer"))
        #expect(metrics.status == 403)
        service.stop()
        let written = try String(contentsOfFile: log, encoding: .utf8)
        for secret in [short, long, fresh, String(parts[4])] { #expect(!written.contains(secret)) }
        #expect(written.contains("link=REDACTED"))
    }

    /// HTTPS: HTTP/2 by ALPN and HTTP/1.1 both served; SIGHUP with a new certificate serves it to the next
    /// connection while a recording goes on, which loses nothing to it: every frame captured is in the file.
    @Test func httpsTakesANewCertificateOnSIGHUPWhileARecordingGoesOn() throws {
        let certificates = try TestCertificates()
        let access = try TestCredentials([("operator", "record", [])])
        let service = try ServiceFixture(["--video", "test-pattern,size=320x240,fps=10", "--access-file", access.accessFile,
                                          "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile],
                                         caFile: certificates.caFile)
        defer { service.stop() }
        let first = try certificates.serial(ofFile: certificates.certificateFile)
        let served = try certificates.served(port: service.port)
        #expect(served.serial == first && served.alpn == "h2", "\(served)")
        let h2 = try service.request("GET", "/session", headers: access.bearer("operator"))
        #expect(h2.status == 200 && h2.httpVersion == "2", "\(h2.httpVersion) \(h2.text)")

        let started = try service.request("POST", "/recordings", json: #"{"file": "tls.mp4", "maxDuration": "4s"}"#, headers: access.bearer("operator"))
        #expect(started.status == 201, "\(started.text)")
        let id = try #require(started.json["id"] as? String)
        #expect(service.waitForEvent("started", recording: id) != nil)
        let second = try certificates.renew()
        #expect(second != first)
        kill(service.pid, SIGHUP)
        #expect(service.waitForEvent("service-reloaded") != nil)
        #expect(try certificates.served(port: service.port).serial == second)
        let finished = try #require(service.waitForEvent("finished", recording: id, seconds: 60))
        let frames = try #require(finished["frames"] as? Int), dropped = try #require(finished["droppedFrames"] as? Int)
        // What the file holds is what the event says, and the capture went on through the reload: 4 s at 10 fps,
        // each frame in the file or counted as dropped (a machine loaded enough may drop some; a reload is no reason to).
        let info = try CapctlRun.run(["info", service.file("tls.mp4"), "--json"])
        let tracks = try #require((try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])?["tracks"] as? [[String: Any]])
        #expect(tracks.first?["frames"] as? Int == frames, "\(finished)")
        #expect(frames + dropped >= 39, "\(finished)")

        // A certificate that cannot be read keeps the one in force, and says so.
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: certificates.certificateFile))
        kill(service.pid, SIGHUP)
        #expect(service.waitForEvent("reload-failed") != nil)
        #expect(try certificates.served(port: service.port).serial == second)
        let h1 = try PendingRequest(method: "GET", url: service.url + "/session", body: nil, headers: access.bearer("operator"),
                                    caFile: certificates.caFile, curlOptions: ["--http1.1"]).response()
        #expect(h1.status == 200 && h1.httpVersion == "1.1", "\(h1.httpVersion)")
    }

    /// The peers' advisories as cases: a foreign page may read nothing (no CORS grant, even with a credential),
    /// and a secret is refused where the document does not take it (a query on a change).
    @Test func aForeignPageGetsNoGrantAndQuerySecretsTakeNoChange() throws {
        let access = try TestCredentials([("root", "admin", [])])
        let service = try ServiceFixture(["--video", "test-pattern,size=320x240,fps=10", "--access-file", access.accessFile])
        defer { service.stop() }
        let read = try service.request("GET", "/session", headers: access.bearer("root").merging(["Origin": "https://evil.example"]) { $1 })
        #expect(read.status == 200)
        #expect(read.headers["access-control-allow-origin"] == nil && read.headers["access-control-allow-credentials"] == nil, "\(read.headers)")
        let preflight = try service.request("OPTIONS", "/recordings", headers: ["Origin": "https://evil.example", "Access-Control-Request-Method": "POST"])
        #expect(preflight.headers["access-control-allow-origin"] == nil, "\(preflight.headers)")
        let change = try service.request("POST", "/recordings", json: #"{"file": "evil.mp4"}"#,
                                         headers: access.bearer("root").merging(["Origin": "https://evil.example"]) { $1 })
        #expect(change.status == 403)
        let secret = access.secrets["root"]!
        #expect(try service.request("POST", "/recordings?access_token=\(secret)", json: #"{"file": "query.mp4"}"#).status == 401)
        #expect(service.files.isEmpty, "\(service.files)")
    }

    /// The access file as `serve --help` says: made at mode 0600 by --add-credential (from any folder),
    /// holding hashes and never a secret; names unique; --list-credentials and --remove-credential;
    /// a file others can read, or that is not an access file, refused at start.
    @Test func theAccessFileIsMadeChangedAndCheckedAsDocumented() throws {
        let access = try TestCredentials([("door", "view", ["0"])])
        let secret = access.secrets["door"]!
        let text = try String(contentsOfFile: access.accessFile, encoding: .utf8)
        #expect(!text.contains(secret) && text.contains("\"role\" : \"view\""), "\(text)")
        let mode = try FileManager.default.attributesOfItem(atPath: access.accessFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(secret.hasPrefix("capctl_") && secret.count == 50, "\(secret)")

        let again = try CapctlRun.run(["serve", "--access-file", access.accessFile, "--add-credential", "door", "--role", "admin"],
                                      in: URL(fileURLWithPath: "/"))
        #expect(again.status == 64 && again.stderrLines.count == 1 && again.stderr.contains("already"), "\(again.stderr)")
        let listed = try CapctlRun.run(["serve", "--access-file", access.accessFile, "--list-credentials"])
        #expect(listed.status == 0 && listed.stdout.hasPrefix("door\tview\t0\t") && !listed.stdout.contains(secret), "\(listed.stdout)")
        let noRole = try CapctlRun.run(["serve", "--access-file", access.accessFile, "--add-credential", "x"])
        #expect(noRole.status == 64 && noRole.stderr.contains("--role"), "\(noRole.stderr)")

        // At start: a file others can read, and one that is not an access file.
        let scratch = try ServiceSecurityFixture.Scratch()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: access.accessFile)
        let open = try CapctlRun.run(["serve", "--video", "test-pattern", "--listen", "127.0.0.1:0", "--dir", scratch.path, "--access-file", access.accessFile])
        #expect(open.status == 64 && open.stderr.contains("644"), "\(open.stderr)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: access.accessFile)
        let removed = try CapctlRun.run(["serve", "--access-file", access.accessFile, "--remove-credential", "door"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try CapctlRun.run(["serve", "--access-file", access.accessFile, "--list-credentials"]).stdout.isEmpty)
        #expect(try CapctlRun.run(["serve", "--access-file", access.accessFile, "--remove-credential", "door"]).status == 64)
        try Data("{\"credentials\": [{\"name\": \"x\", \"role\": \"owner\", \"sha256\": \"00\"}]}".utf8).write(to: URL(fileURLWithPath: access.accessFile))
        let wrong = try CapctlRun.run(["serve", "--video", "test-pattern", "--listen", "127.0.0.1:0", "--dir", scratch.path, "--access-file", access.accessFile])
        #expect(wrong.status == 65 && wrong.stderrLines.count == 1 && wrong.stderr.contains("role"), "\(wrong.stderr)")
        // Beyond loopback, credentials are needed (nothing here listens beyond loopback: only the refusal is tried).
        let bare = try CapctlRun.run(["serve", "--listen", "0.0.0.0:0", "--dir", scratch.path])
        #expect(bare.status == 64 && bare.stderr.contains("--access-file"), "\(bare.stderr)")
        // A file of secrets inside the folder the service serves files from is refused.
        let inside = try CapctlRun.run(["serve", "--video", "test-pattern", "--listen", "127.0.0.1:0", "--dir", access.folder,
                                        "--access-file", access.accessFile])
        #expect(inside.status == 64 && inside.stderr.contains("inside --dir"), "\(inside.stderr)")
        let keyInside = try CapctlRun.run(["serve", "--video", "test-pattern", "--listen", "127.0.0.1:0", "--dir", scratch.path,
                                           "--link-key-file", scratch.path + "/link.key"])
        #expect(keyInside.status == 64 && !FileManager.default.fileExists(atPath: scratch.path + "/link.key"), "\(keyInside.stderr)")
        let padded = try CapctlRun.run(["serve", "--access-file", access.accessFile, "--add-credential", "y", "--role", "view", "--credential-camera", "01"])
        #expect(padded.status == 64 && padded.stderr.contains("--credential-camera"), "\(padded.stderr)")
    }
}
