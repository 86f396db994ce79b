import CapctlService
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// GET and HEAD /files/NAME in this process: the whole file, byte ranges
/// (from the start, from the end, beyond it), and HEAD's headers.
@Suite struct FileRouteTests {
    @Test func rangesAndHeadAnswerWhatTheFileHolds() async throws {
        let setup = try InProcessService(["--video", "test-pattern"])
        defer { setup.remove() }
        let content = Data("0123456789abcdef".utf8)
        try content.write(to: URL(fileURLWithPath: setup.folder + "/notes.txt"))
        try await setup.test { client, _ in
            let whole = try await client.send(.get, "/files/notes.txt")
            #expect(whole.status == .ok && whole.data == content)
            #expect(whole.header("Accept-Ranges") == "bytes" && whole.header("Content-Length") == "16")
            let part = try await client.send(.get, "/files/notes.txt", headers: [.range: "bytes=2-4"])
            #expect(part.status == .partialContent && String(buffer: part.body) == "234")
            #expect(part.header("Content-Range") == "bytes 2-4/16" && part.header("Content-Length") == "3")
            let tail = try await client.send(.get, "/files/notes.txt", headers: [.range: "bytes=-3"])
            #expect(tail.status == .partialContent && String(buffer: tail.body) == "def")
            let beyond = try await client.send(.get, "/files/notes.txt", headers: [.range: "bytes=100-"])
            #expect(beyond.status == .rangeNotSatisfiable && beyond.header("Content-Range") == "bytes */16")
            // HEAD: GET's headers, its length included, and no body.
            let head = try await client.send(.head, "/files/notes.txt")
            #expect(head.status == .ok)
            #expect(head.header("Content-Length") == "16")
            #expect(head.header("Accept-Ranges") == "bytes")
            #expect(head.body.readableBytes == 0)
        }
    }

    /// A JSON file (a raw photo's description) is sent whole, whatever range is
    /// asked for: a range of it would be no JSON document.
    @Test func aJSONFileIsSentWhole() async throws {
        let setup = try InProcessService(["--video", "test-pattern"])
        defer { setup.remove() }
        let content = #"{"fourcc": "YUYV", "width": 640}"#
        try Data(content.utf8).write(to: URL(fileURLWithPath: setup.folder + "/frame.RAW.json"))
        try await setup.test { client, _ in
            for range in ["bytes=0-0", "bytes=100-", "bytes=-3"] {
                let reply = try await client.send(.get, "/files/frame.RAW.json", headers: [.range: range])
                #expect(reply.status == .ok, "\(range)")
                #expect(String(buffer: reply.body) == content && reply.header("Content-Type") == "application/json")
                #expect(reply.header("Accept-Ranges") == "none" && reply.header("Content-Range") == nil)
            }
            #expect(try await client.send(.head, "/files/frame.RAW.json").header("Accept-Ranges") == "none")
        }
    }
}
