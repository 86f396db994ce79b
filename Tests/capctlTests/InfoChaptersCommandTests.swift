import CaptureKit
import Foundation
import Testing

/// `capctl info` on recordings with markers: their chapters, in text and
/// in `--json`.
@Suite struct InfoChaptersCommandTests {
    /// Records the test-pattern camera for about 1.5 s with markers at
    /// about 0.4 s and 0.9 s; answers the markers as the recorder placed them.
    static func record(_ path: String) throws -> [RecordingMarker] {
        let session = CaptureSession()
        session.addInput(try CaptureInput(camera: "test-pattern", request: CaptureVideoRequest(width: 160, height: 120)))
        let recorder = try CaptureRecorder(CaptureRecorderConfiguration(destination: path))
        try recorder.start(on: session)
        defer { session.stopRunning() }
        let output = try #require(recorder.fileOutput)
        func reach(_ seconds: Double) -> Bool {
            let deadline = Date(timeIntervalSinceNow: 10)
            while output.recordedDuration.seconds < seconds {
                if Date() > deadline { return false }
                usleep(5_000)
            }
            return true
        }
        try #require(reach(0.4))
        let first = try recorder.addMarker(title: "the door opened")
        try #require(reach(0.9))
        let second = try recorder.addMarker(title: "\"quoted\" – ü")
        try #require(reach(1.5))
        recorder.stop()
        recorder.finish()
        return [first, second]
    }

    @Test(arguments: ["markers.mp4", "markers.mkv"])
    func infoListsTheChaptersAMarkedRecordingCarries(name: String) throws {
        let scratch = try InfoFrameCommandTests.Scratch()
        let path = scratch.file(name)
        let markers = try Self.record(path)

        let result = try CapctlRun.run(["info", "--json", path])
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let chapters = try #require(document["chapters"] as? [[String: Any]])
        #expect(chapters.map { $0["title"] as? String } == markers.map(\.title))
        let starts = chapters.compactMap { $0["start"] as? Double }
        let ends = chapters.compactMap { $0["end"] as? Double }
        try #require(starts.count == 2 && ends.count == 2)
        // Within one frame interval of the marker (30 fps), each ending where the next starts, the last at the end.
        for (start, marker) in zip(starts, markers) { #expect(abs(start - marker.time.seconds) <= 1.0 / 30, "\(start) \(marker.time.seconds)") }
        #expect(ends[0] == starts[1])
        let duration = try #require(document["duration"] as? Double)
        #expect(abs(ends[1] - duration) <= 1.0 / 30, "\(ends[1]) \(duration)")

        let text = try CapctlRun.run(["info", path])
        #expect(text.status == 0)
        #expect(text.stdout.contains("  chapters:\n    1: "), "\(text.stdout)")
        #expect(text.stdout.contains("s \"the door opened\"\n    2: "), "\(text.stdout)")
        #expect(text.stdout.hasSuffix("s \"\"quoted\" – ü\"\n"), "\(text.stdout)")
    }

    @Test func aFileWithoutChaptersHasAnEmptyList() throws {
        let scratch = try InfoFrameCommandTests.Scratch()
        let path = scratch.file("plain.mp4")
        try InfoFrameCommandTests.recording(path)
        let result = try CapctlRun.run(["info", "--json", path])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect((document["chapters"] as? [Any])?.isEmpty == true)
        #expect(!(try CapctlRun.run(["info", path]).stdout.contains("chapters")))
    }
}
