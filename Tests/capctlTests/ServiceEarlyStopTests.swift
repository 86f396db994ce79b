import Foundation
import Testing

/// A recording stopped over HTTP before any media reached its file ends as
/// `stopped`, not as an error: no file, `files` empty, exit status 0, and
/// the folder holds nothing.
@Suite(.serialized) struct ServiceEarlyStopTests {
    @Test func aStopBeforeTheFirstFrameLeavesNoFile() throws {
        // A camera that sends a frame every 10 s: a stop 100 ms after the
        // start comes before its next frame (nine times in ten it comes
        // before any frame at all; the test holds either way).
        let service = try ServiceFixture(["--video", "test-pattern,fps=0.1"])
        let created = try service.request("POST", "/recordings", json: #"{"file": "early.mp4"}"#)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json["id"] as? String)
        usleep(100_000)
        let stopped = try service.request("POST", "/recordings/\(id)/stop")
        #expect(stopped.status == 200, "\(stopped.text)")
        let finished = try #require(service.waitForEvent("finished", recording: id, seconds: 30))
        #expect(finished["reason"] as? String == "stopped", "\(finished)")
        #expect(finished["exitStatus"] as? Int == 0, "\(finished)")
        #expect(finished["error"] == nil, "\(finished)")
        let files = try #require(finished["files"] as? [String])
        // Every file it names is there; with no frame, there is none.
        for file in files { #expect(FileManager.default.fileExists(atPath: service.file(file)), "\(file) is named and missing") }
        if finished["frames"] as? Int == 0 {
            #expect(files.isEmpty, "\(finished)")
            #expect(!FileManager.default.fileExists(atPath: service.file("early.mp4")))
            #expect(service.events("segment", recording: id).isEmpty)
        }
        let listed = try service.request("GET", "/recordings/\(id)").json
        #expect(listed["state"] as? String == "finished")
        let listedFiles = try #require(listed["files"] as? [String])
        for file in listedFiles { #expect(FileManager.default.fileExists(atPath: service.file(file)), "GET lists \(file), which is not there") }
    }
}
