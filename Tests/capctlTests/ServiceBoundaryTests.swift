import Foundation
import Testing

/// `capctl serve`'s boundary, against the real binary on 127.0.0.1: what
/// arrives in a request and what it leaves behind. A token in the query is
/// not written to the access log; a request with two Host headers, a body
/// that is not declared JSON, a change from another page's Referer, a file
/// name that is not percent-encoded right or holds a control character are
/// refused with a one-line JSON error, and change nothing.
@Suite struct ServiceBoundaryTests {
    static let token = "capctl-boundary-token-0123456789abcdef"

    // MARK: Access log

    @Test func theAccessLogNeverHoldsAToken() throws {
        let service = try ServiceSecurityFixture(token: Self.token)
        defer { service.stop() }
        let log = service.parent + "/stderr"

        #expect(try service.request("GET", "/session?access_token=\(Self.token)").status == 200)
        #expect(try service.request("GET", "/recordings?limit=1&access_token=\(Self.token)&x=y").status == 200)
        // Wrong tokens, and one percent-encoded, are someone's secret too.
        #expect(try service.request("GET", "/session?access_token=wrong-\(Self.token)").status == 401)
        #expect(try service.request("GET", "/devices?access%5Ftoken=\(Self.token)").status == 401)
        #expect(try service.request("DELETE", "/files/x.txt?access_token=\(Self.token)").status == 401)

        let lines = try #require(Self.lines(of: log, atLeast: 5), "the access log: \(Self.text(log))")
        let written = lines.joined(separator: "\n")
        #expect(!written.contains(Self.token), "\(written)")
        #expect(written.contains("\"GET /session?access_token=REDACTED\" 200"), "\(written)")
        #expect(written.contains("\"GET /recordings?limit=1&access_token=REDACTED&x=y\" 200"), "\(written)")
        #expect(written.contains("\"GET /session?access_token=REDACTED\" 401"), "\(written)")
        #expect(written.contains("\"GET /devices?access%5Ftoken=REDACTED\" 401"), "\(written)")
        #expect(written.contains("\"DELETE /files/x.txt?access_token=REDACTED\" 401"), "\(written)")
    }

    // MARK: Host

    @Test func aRequestWithTwoHostHeadersIsRefused() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let own = "127.0.0.1:\(service.port)"

        let single = try LoopbackHTTP.request(port: service.port, "GET", "/session", headers: [("Host", own)])
        #expect(single.status == 200, "\(single.text)")
        for pair in [(own, own), (own, "evil.example"), ("evil.example", own), (own, "localhost:\(service.port)")] {
            for secondName in ["Host", "host", "HOST"] {
                let answer = try LoopbackHTTP.request(port: service.port, "GET", "/session",
                                                      headers: [("Host", pair.0), (secondName, pair.1)])
                #expect(answer.status == 400, "Host \(pair.0), \(secondName) \(pair.1): \(answer.status) \(answer.text)")
                #expect(answer.errorMessage?.contains("Host") == true, "\(answer.text)")
                #expect(Self.isOneLine(answer), "\(answer.text)")
            }
        }
        // A change with two Hosts changes nothing.
        let post = try LoopbackHTTP.request(port: service.port, "POST", "/recordings",
                                            headers: [("Host", own), ("Host", own), ("Content-Type", "application/json")],
                                            body: #"{"file": "twice.mp4"}"#)
        #expect(post.status == 400, "\(post.text)")
        #expect(try Self.recordingCount(service) == 0)
        #expect(service.servedFiles.isEmpty)
    }

    // MARK: Content-Type

    @Test func aBodyMustBeDeclaredJSON() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let host = ("Host", "127.0.0.1:\(service.port)")
        let recording = #"{"file": "typed.mp4", "maxDuration": 30}"#
        FileManager.default.createFile(atPath: service.served + "/kept.txt", contents: Data("kept".utf8))

        let refusals: [(method: String, target: String, type: String?, body: String)] = [
            ("POST", "/recordings", "text/plain", recording),
            ("POST", "/recordings", nil, recording),
            ("POST", "/recordings", "application/x-www-form-urlencoded", recording),
            ("POST", "/recordings", "multipart/form-data; boundary=x", recording),
            ("POST", "/recordings", "application/jsonx", recording),
            ("POST", "/recordings", "text/json", recording),
            ("PATCH", "/devices/0/controls", "text/plain", #"{"brightness": 10}"#),
            ("POST", "/devices/0/torch", "text/plain", #"{"on": true}"#),
            ("POST", "/photos", "text/plain", #"{"file": "typed.jpg"}"#),
            ("DELETE", "/files/kept.txt", "text/plain", "{}"),
            ("PUT", "/recordings", "text/plain", recording),
        ]
        for refusal in refusals {
            var headers = [host]
            if let type = refusal.type { headers.append(("Content-Type", type)) }
            let answer = try LoopbackHTTP.request(port: service.port, refusal.method, refusal.target, headers: headers, body: refusal.body)
            let what = "\(refusal.method) \(refusal.target) as \(refusal.type ?? "no type")"
            #expect(answer.status == 415, "\(what): \(answer.status) \(answer.text)")
            #expect(answer.errorMessage?.contains("application/json") == true, "\(what): \(answer.text)")
            #expect(Self.isOneLine(answer), "\(what): \(answer.text)")
        }
        #expect(try Self.recordingCount(service) == 0)
        #expect(service.servedFiles == ["kept.txt"])

        // JSON, with parameters and in any case, is taken.
        let created = try LoopbackHTTP.request(port: service.port, "POST", "/recordings",
                                               headers: [host, ("Content-Type", "application/json; charset=utf-8")], body: recording)
        #expect(created.status == 201, "\(created.text)")
        let marker = try LoopbackHTTP.request(port: service.port, "POST", "/recordings/rec-1/markers",
                                              headers: [host, ("Content-Type", "Application/JSON;charset=UTF-8")], body: #"{"title": "t"}"#)
        #expect(marker.status == 201, "\(marker.text)")
        let markerAsText = try LoopbackHTTP.request(port: service.port, "POST", "/recordings/rec-1/markers",
                                                    headers: [host, ("Content-Type", "text/plain")], body: #"{"title": "t"}"#)
        #expect(markerAsText.status == 415, "\(markerAsText.text)")

        // No body, or an empty one, needs no type.
        let stop = try LoopbackHTTP.request(port: service.port, "POST", "/recordings/rec-1/stop", headers: [host])
        #expect(stop.status == 200, "\(stop.text)")
        let second = try LoopbackHTTP.request(port: service.port, "POST", "/recordings",
                                              headers: [host, ("Content-Type", "application/json")],
                                              body: #"{"file": "second.mp4", "maxDuration": 30}"#)
        #expect(second.status == 201, "\(second.text)")
        // curl -d '' sends this type with no byte of body.
        let emptyBody = try LoopbackHTTP.request(port: service.port, "POST", "/recordings/rec-2/stop",
                                                 headers: [host, ("Content-Type", "application/x-www-form-urlencoded")], body: "")
        #expect(emptyBody.status == 200, "\(emptyBody.status) \(emptyBody.text)")
        let delete = try LoopbackHTTP.request(port: service.port, "DELETE", "/files/kept.txt", headers: [host])
        #expect(delete.status == 200, "\(delete.text)")
        #expect(!service.servedFiles.contains("kept.txt"))
    }

    // MARK: Referer

    @Test func aChangeFromAnotherPagesRefererIsRefused() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let port = service.port
        let body = #"{"file": "referred.mp4", "maxDuration": 30}"#
        FileManager.default.createFile(atPath: service.served + "/kept.txt", contents: Data("kept".utf8))

        for referer in ["http://evil.example/cam", "http://127.0.0.1:\(port + 1)/", "http://localhost:\(port)/",
                        "http://127.0.0.1:\(port).evil.example/", "http://user@127.0.0.1:\(port)/", "/relative", "not a URL"] {
            let post = try service.request("POST", "/recordings", headers: ["Referer": referer], json: body)
            #expect(post.status == 403, "Referer \(referer): \(post.status) \(post.text)")
            #expect(post.errorMessage != nil, "\(post.text)")
            let delete = try service.request("DELETE", "/files/kept.txt", headers: ["Referer": referer])
            #expect(delete.status == 403, "Referer \(referer): \(delete.status) \(delete.text)")
        }
        #expect(try Self.recordingCount(service) == 0)
        #expect(service.servedFiles == ["kept.txt"])

        // Reading from another page changes nothing, and is answered.
        #expect(try service.request("GET", "/session", headers: ["Referer": "http://evil.example/"]).status == 200)
        // The service's own pages may change things; an Origin, when sent, decides.
        let own = try service.request("POST", "/recordings", headers: ["Referer": "http://127.0.0.1:\(port)/?camera=0"], json: body)
        #expect(own.status == 201, "\(own.text)")
        let stop = try service.request("POST", "/recordings/rec-1/stop",
                                       headers: ["Origin": "http://127.0.0.1:\(port)", "Referer": "http://evil.example/"])
        #expect(stop.status == 200, "\(stop.text)")
        let delete = try service.request("DELETE", "/files/kept.txt", headers: ["Referer": "http://127.0.0.1:\(port)/files"])
        #expect(delete.status == 200, "\(delete.text)")
    }

    // MARK: File names

    @Test func aFileNameIsPercentDecodedOnce() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        let outside = service.parent + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/secret.txt"))
        try FileManager.default.createDirectory(atPath: service.served + "/sub", withIntermediateDirectories: false)
        try Data("spaced".utf8).write(to: URL(fileURLWithPath: service.served + "/a b.txt"))
        try Data("literal".utf8).write(to: URL(fileURLWithPath: service.served + "/%2e.txt"))
        try Data("dot".utf8).write(to: URL(fileURLWithPath: service.served + "/.txt"))
        try Data("nested".utf8).write(to: URL(fileURLWithPath: service.served + "/sub/ü.txt"))

        for (target, content) in [("a%20b.txt", "spaced"), ("%252e.txt", "literal"), ("%2etxt", "dot"), ("%2Etxt", "dot"),
                                  ("sub/%C3%BC.txt", "nested"), ("sub%2F%C3%BC.txt", "nested")] {
            let answer = try service.request("GET", "/files/" + target)
            #expect(answer.status == 200 && answer.text == content, "GET /files/\(target): \(answer.status) \(answer.text)")
        }
        #expect(try service.request("HEAD", "/files/a%20b.txt").status == 200)

        // Decoded, a name is held to the folder as any other.
        for target in ["%2e%2e%2foutside%2fsecret.txt", "%2E%2E/outside/secret.txt", "sub%2f%2e%2e%2f%2e%2e%2foutside%2fsecret.txt",
                       "%2f" + outside.dropFirst().replacingOccurrences(of: "/", with: "%2f") + "%2fsecret.txt", "sub%2f%2fa%20b.txt",
                       "%2e%2fa%20b.txt", "%252e%252e%252foutside%252fsecret.txt"] {
            for method in ["GET", "HEAD", "DELETE"] {
                let answer = try service.request(method, "/files/" + target)
                #expect(answer.status == 404 || answer.status == 400, "\(method) /files/\(target): \(answer.status) \(answer.text)")
                #expect(!answer.text.contains("secret") || answer.errorMessage != nil, "\(method) /files/\(target): \(answer.text)")
            }
        }

        // Percent-encoding that is not: a 400 that says so.
        try Self.expectRefused(["%zz.txt", "a%2", "a%", "%g0.txt", "a%2%30.txt", "%ff.txt", "%C3.txt", "%C3%28.txt"],
                               by: service, saying: "percent")

        // DELETE takes the decoded name too; nothing else went.
        let delete = try service.request("DELETE", "/files/a%20b.txt")
        #expect(delete.status == 200 && delete.json?["deleted"] as? String == "a b.txt", "\(delete.text)")
        #expect(service.servedFiles == ["%2e.txt", ".txt", "sub"])
        #expect(try String(contentsOfFile: outside + "/secret.txt", encoding: .utf8) == "secret")
    }

    @Test func aFileNameWithAControlCharacterIsRefused() throws {
        let service = try ServiceSecurityFixture()
        defer { service.stop() }
        // A file whose name holds one, made by another program.
        let bell = "bell\u{07}.txt"
        try Data("bell".utf8).write(to: URL(fileURLWithPath: service.served + "/" + bell))

        try Self.expectRefused(["bell%07.txt", "a%0Ab.txt", "a%0D%0Ab.txt", "a%00b.txt", "a%09b.txt", "a%1Fb.txt", "a%7Fb.txt", "sub%2Fa%01b.txt"],
                               by: service, saying: "control character")
        #expect(service.servedFiles == [bell])

        // Names in a body: a recording's file and photos' file.
        for name in ["a\u{01}.mp4", "line\n.mp4", "tab\t.mp4", "del\u{7F}.mp4", "sub\u{1B}/a.mp4"] {
            let body = try ServiceSecurityFixture.jsonText(["file": name, "maxDuration": 5])
            let answer = try service.request("POST", "/recordings", json: body)
            #expect(answer.status == 400, "file \(name.debugDescription): \(answer.status) \(answer.text)")
            #expect(answer.errorMessage?.contains("control character") == true, "\(answer.text)")
            #expect(Self.isOneLine(answer), "\(answer.text)")
        }
        let photo = try service.request("POST", "/photos", json: try ServiceSecurityFixture.jsonText(["file": "shot\u{07}.jpg"]))
        #expect(photo.status == 400, "\(photo.status) \(photo.text)")
        #expect(photo.errorMessage?.contains("control character") == true, "\(photo.text)")
        #expect(try Self.recordingCount(service) == 0)
        #expect(service.servedFiles == [bell])
    }

    // MARK: Helpers

    /// Whether an answer is a refusal of one line: `{"error": "…"}` and a newline.
    /// GET and DELETE of each `/files/TARGET` are a one-line 400 whose message holds `reason`; HEAD is a 400.
    static func expectRefused(_ targets: [String], by service: ServiceSecurityFixture, saying reason: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        for target in targets {
            for method in ["GET", "DELETE"] {
                let answer = try service.request(method, "/files/" + target)
                #expect(answer.status == 400, "\(method) /files/\(target): \(answer.status) \(answer.text)", sourceLocation: sourceLocation)
                #expect(answer.errorMessage?.contains(reason) == true, "\(method) /files/\(target): \(answer.text)", sourceLocation: sourceLocation)
                #expect(isOneLine(answer), "\(method) /files/\(target): \(answer.text)", sourceLocation: sourceLocation)
            }
            #expect(try service.request("HEAD", "/files/" + target).status == 400, "HEAD /files/\(target)", sourceLocation: sourceLocation)
        }
    }

    static func isOneLine(_ answer: ServiceSecurityFixture.Answer) -> Bool {
        answer.errorMessage != nil && answer.text.hasSuffix("\n") && answer.text.dropLast().allSatisfy { !$0.isNewline }
    }

    /// The recordings the service lists.
    static func recordingCount(_ service: ServiceSecurityFixture) throws -> Int {
        let list = try service.request("GET", "/recordings")
        return try #require(list.json?["recordings"] as? [Any], "\(list.text)").count
    }

    /// The lines of a log once it has at least `count`, waiting up to 20 s (a line is
    /// written as its response is made, which may be just after the client has it).
    static func lines(of path: String, atLeast count: Int) -> [Substring]? {
        let deadline = Date().addingTimeInterval(20)
        repeat {
            let lines = text(path).split(separator: "\n")
            if lines.count >= count { return lines }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }

    static func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
}
