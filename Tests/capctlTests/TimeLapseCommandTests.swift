import Foundation
import Glibc
import Testing

/// `record --timelapse`: one frame for each interval of capture time, the
/// movie playing at --timelapse-fps. The test pattern draws its frame
/// number into each picture (30 a second), so the file says which
/// captured frames it holds; with --no-realtime it runs ahead of the clock
/// with exact 30 fps stamps, so capture time is exact too.
@Suite(.serialized) struct TimeLapseCommandTests {
    static let small = ["--video", "test-pattern", "--size", "320x240"]

    static func events(_ result: CapctlRun) -> [[String: Any]] {
        result.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// The file's duration as ffprobe reads it from the container.
    static func probedDuration(_ path: String) throws -> Double {
        let result = try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        return try #require(Double(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// The video stream's frame rate as ffprobe states it (r_frame_rate).
    static func probedRate(_ path: String) throws -> String {
        let result = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=r_frame_rate", "-of", "csv=p=0", path])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Steps between the captured frame numbers the file shows.
    static func steps(_ numbers: [Int?]) throws -> [Int] {
        let read = numbers.compactMap { $0 }
        try #require(read.count == numbers.count, "unreadable frame numbers in \(numbers)")
        return zip(read.dropFirst(), read).map { $0 - $1 }
    }

    @Test func aTenthOfASecondOverThreeSecondsOfCaptureIsThirtyFramesPlayingInOneSecond() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.small + ["--no-realtime", "--timelapse", "0.1", "--max-duration", "1",
                                                                  "--progress", "json", "out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let finished = try #require(Self.events(result).last)
        #expect(finished["event"] as? String == "finished")
        #expect(finished["reason"] as? String == "max-duration")
        let frames = try #require(finished["frames"] as? Int)
        #expect(abs(frames - 30) <= 1, "\(frames) frames")
        #expect(abs((finished["duration"] as? Double ?? 0) - Double(frames) / 30) <= 1e-3)
        #expect(finished["dropped"] as? Int == 0)
        let path = scratch.file("out.mp4")
        #expect(abs(try Self.probedDuration(path) - 1) <= 1.0 / 30 + 1e-3)
        #expect(try Self.probedRate(path) == "30/1")
        let numbers = try PreRollCommandTests.frameNumbers(path)
        #expect(numbers.count == frames)
        #expect(try Self.steps(numbers).allSatisfy { $0 == 3 }, "frame numbers \(numbers)")
        #expect(numbers.first == 0)
    }

    @Test func theMoviePlaysAtTheTimeLapseRateWhileFpsStaysTheCameras() throws {
        let scratch = try RecordScratch()
        // The camera at 20 fps, a frame kept every 0.2 s (every 4th), played at 10 fps: 1 s of movie is 2 s of capture.
        let result = try CapctlRun.run(["record"] + Self.small + ["--fps", "20", "--no-realtime", "--timelapse", "200ms", "--timelapse-fps", "10",
                                                                  "--max-duration", "1", "--progress", "json", "out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let finished = try #require(Self.events(result).last)
        #expect(finished["frames"] as? Int == 10)
        let path = scratch.file("out.mp4")
        #expect(try Self.probedRate(path) == "10/1")
        #expect(abs(try Self.probedDuration(path) - 1) <= 0.1 + 1e-3)
        #expect(try Self.steps(PreRollCommandTests.frameNumbers(path)) == Array(repeating: 4, count: 9))
    }

    @Test func segmentsCutOnMediaTimeAndEachPlays() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.small + ["--no-realtime", "--timelapse", "0.1", "--max-duration", "2",
                                                                  "--segment-duration", "0.5", "--progress", "json", "seg-%n.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = Self.events(result)
        let finished = try #require(events.last)
        let files = try #require(finished["files"] as? [String])
        #expect(files == ["seg-1.mp4", "seg-2.mp4", "seg-3.mp4", "seg-4.mp4"])
        let segments = events.filter { $0["event"] as? String == "segment" }
        #expect(segments.count == 4)
        var all: [Int?] = []
        for (file, segment) in zip(files, segments) {
            let path = scratch.file(file)
            let frames = try decodedFrames(path)
            #expect(segment["frames"] as? Int == frames, "\(file)")
            #expect(frames == 15, "\(file): \(frames) frames")
            #expect(abs(try Self.probedDuration(path) - 0.5) <= 1.0 / 30 + 1e-3, "\(file)")
            all += try PreRollCommandTests.frameNumbers(path)
        }
        // Across the files, every third captured frame, none twice, none left out.
        #expect(try Self.steps(all).allSatisfy { $0 == 3 }, "frame numbers \(all)")
        #expect(finished["frames"] as? Int == 60)
    }

    @Test func aPauseLeavesTheTicksItLastedOutOfTheMovieWithoutAGap() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.small + ["--timelapse", "0.1", "out.mp4"], in: scratch.url)
        try recorder.waitForMedia(0.2)
        let before = recorder.count("paused")
        recorder.signal(SIGUSR1)
        try recorder.waitFor { _ in recorder.count("paused") > before }
        usleep(1_500_000)
        _ = try recorder.resume()
        let resumedAt = try #require(recorder.events.last { $0["event"] as? String == "resumed" }?["duration"] as? Double)
        try recorder.waitForMedia(resumedAt + 0.2)
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let finished = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        let frames = try #require(finished["frames"] as? Int)
        let duration = try #require(finished["duration"] as? Double)
        #expect(abs(duration - Double(frames) / 30) <= 1e-3, "\(frames) frames in \(duration) s")

        let path = scratch.file("out.mp4")
        #expect(try decodedFrames(path) == frames)
        // The movie runs on at 1/30 s a frame across the pause.
        let times = try packetTimes(path).sorted()
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { abs($0 - 1.0 / 30) < 1e-3 }, "packet steps \(gaps)")
        // The pictures step by 3 captured frames, but once: over the pause (1.5 s, 45 frames at least).
        let steps = try Self.steps(PreRollCommandTests.frameNumbers(path))
        let jumps = steps.filter { $0 != 3 }
        #expect(jumps.count == 1 && jumps[0] >= 45, "steps \(steps)")
    }

    @Test(arguments: [
        (["--audio", "test-tone", "out.mp4"], "a time-lapse has no sound"),
        (["--stream", "rtmp://127.0.0.1:1/live/x", "out.mp4"], "a time-lapse is written to a file, and a stream plays live; leave out --stream"),
        (["--video-codec", "copy", "out.mp4"], "leave out --video-codec copy"),
        (["--pre-roll", "2s", "--start-paused", "out.mp4"], "leave them out"),
        (["out.wav"], "a time-lapse is a movie"),
    ])
    func refusedWithAReason(extra: [String], message: String) throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record", "--video", "test-pattern", "--timelapse", "1s"] + extra, in: scratch.url)
        #expect(result.status == 64, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(scratch.contents.isEmpty, "left behind: \(scratch.contents)")
    }

    @Test func aPlaybackRateWithoutATimeLapseIsRefused() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record", "--video", "test-pattern", "--timelapse-fps", "25", "out.mp4"], in: scratch.url)
        #expect(result.status == 64)
        #expect(result.stderr.contains("--timelapse-fps is the rate a time-lapse plays at; add --timelapse INTERVAL"), "stderr: \(result.stderr)")
        #expect(scratch.contents.isEmpty)
    }
}
