import Foundation
import Glibc
import Testing

/// `record`'s pauses: the time paused is left out of the file, and a
/// resume begins its stretch at the next frame, also from a slow camera.
@Suite(.serialized) struct PauseCommandTests {
    static let small = RecordCommandTests.small

    @Test func pausedTimeIsLeftOut() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.small + ["--max-duration", "2", "out.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= 0.5 }
        recorder.signal(SIGUSR1)
        let paused = try recorder.waitFor { $0["event"] as? String == "paused" }
        let pausedAt = try #require(paused["duration"] as? Double)
        usleep(1_500_000)
        // Still paused: the recorded duration has not moved.
        let during = recorder.events.last { $0["event"] as? String == "progress" }
        #expect(during?["paused"] as? Bool == true)
        #expect(abs((during?["duration"] as? Double ?? -1) - pausedAt) < 1e-6)
        recorder.signal(SIGUSR2)
        try recorder.waitFor { $0["event"] as? String == "resumed" }
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let event = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        #expect(event["reason"] as? String == "max-duration")
        // 2 s recorded at 30 fps, the 1.5 s pause left out.
        let frames = try #require(event["frames"] as? Int)
        #expect(abs(frames - 60) <= 1, "\(frames) frames")
        #expect(try decodedFrames(scratch.file("out.mp4")) == frames)
        let info = try mediaInfo(scratch.file("out.mp4"))
        let duration = try #require(info["duration"] as? Double)
        #expect(abs(duration - 2) <= 2.0 / 30 + 1e-6, "file lasts \(duration) s")
    }

    /// A camera slower than the writer's idle timeout (4 fps: 250 ms
    /// between frames): a resume takes effect at the next frame, so the
    /// pause leaves no still stretch in the file.
    @Test func aSlowCamerasPauseLeavesNoGap() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(["--video", "test-pattern", "--size", "320x240", "--fps", "4", "out.mp4"], in: scratch.url)
        try recorder.waitForMedia(1)
        recorder.signal(SIGUSR1)
        try recorder.waitFor { $0["event"] as? String == "paused" }
        usleep(1_500_000)
        let resumedAt = try recorder.resume()
        try recorder.waitForMedia(resumedAt + 1)
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let finished = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        let frames = try #require(finished["frames"] as? Int)
        let path = scratch.file("out.mp4")
        #expect(try decodedFrames(path) == frames)
        // Each frame a quarter second after the one before, across the pause too.
        let times = try packetTimes(path).sorted()
        let steps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(!steps.isEmpty && steps.allSatisfy { abs($0 - 0.25) < 0.06 }, "packet steps \(steps)")
    }
}
