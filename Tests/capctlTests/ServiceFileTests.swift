import Foundation
import Testing

/// GET and HEAD /files/NAME: the whole file, one byte range, a range beyond it, and HEAD's headers.
@Suite struct ServiceFileTests {
    @Test func rangesAndHeadAnswerWhatTheFileHolds() throws {
        let service = try ServiceFixture(["--video", "test-pattern"])
        let content = Data("0123456789abcdef".utf8)
        try content.write(to: URL(fileURLWithPath: service.file("notes.txt")))
        let whole = try service.request("GET", "/files/notes.txt")
        #expect(whole.status == 200 && whole.body == content)
        #expect(whole.headers["accept-ranges"] == "bytes" && whole.headers["content-length"] == "16")
        let part = try service.request("GET", "/files/notes.txt", headers: ["Range": "bytes=2-4"])
        #expect(part.status == 206 && part.text == "234")
        #expect(part.headers["content-range"] == "bytes 2-4/16" && part.headers["content-length"] == "3")
        let tail = try service.request("GET", "/files/notes.txt", headers: ["Range": "bytes=-3"])
        #expect(tail.status == 206 && tail.text == "def")
        let beyond = try service.request("GET", "/files/notes.txt", headers: ["Range": "bytes=100-"])
        #expect(beyond.status == 416 && beyond.headers["content-range"] == "bytes */16")
        // HEAD: GET's headers, its length included, and no body.
        let head = try runTool("curl", ["-s", "-I", "--max-time", "10", "\(service.url)/files/notes.txt"])
        #expect(head.status == 0)
        let lines = head.stdout.lowercased().split(whereSeparator: \.isNewline)
        #expect(lines.first?.contains("200") == true)
        #expect(lines.contains { $0.trimmingCharacters(in: .whitespaces) == "content-length: 16" }, "\(head.stdout)")
    }
}
