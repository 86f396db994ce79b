import Foundation
import Glibc
import Testing

/// `capctl record` with several `--video` cameras: one movie with a track
/// per camera, or a file per camera with `%c`, cut, paused and limited
/// together; checked on the files with `capctl info` and ffprobe.
@Suite(.serialized) struct MultiCameraCommandTests {
    static let cameras = ["--video", "test-pattern,size=320x240,fps=30", "--video", "test-pattern,size=160x120,fps=15", "--audio", "test-tone"]

    func finished(_ result: CapctlRun) throws -> [String: Any] {
        let line = try #require(result.stdout.split(separator: "\n").last)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(event["event"] as? String == "finished")
        return event
    }

    func events(_ result: CapctlRun) -> [[String: Any]] {
        result.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// Both cameras at their own size and rate in one file, each track
    /// named after its device; the frames reported are the frames in it.
    @Test(arguments: ["mp4", "mov", "mkv"])
    func twoCamerasInOneMovie(container: String) throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record", "--progress", "json"] + Self.cameras + ["--max-duration", "2", "two.\(container)"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["files"] as? [String] == ["two.\(container)"])
        let started = try #require(events(result).first)
        #expect((started["inputs"] as? [[String: Any]])?.compactMap { $0["width"] as? Int } == [320, 160])

        let path = scratch.file("two.\(container)")
        let first = try decodedFrames(path, stream: "v:0")
        let second = try decodedFrames(path, stream: "v:1")
        #expect(first + second == event["frames"] as? Int)
        // 2 s at 30 and at 15 fps: what the cameras sent is in the file or
        // reported dropped (a starved machine may drop some); each camera
        // may begin or end a frame apart from the cut.
        let dropped = try #require(event["droppedFrames"] as? Int)
        #expect(abs(first + second + dropped - 90) <= 2, "\(first) + \(second) frames, \(dropped) dropped")
        #expect(first <= 61 && second <= 31, "\(first) and \(second) frames")

        let info = try mediaInfo(path)
        let tracks = try #require(info["tracks"] as? [[String: Any]])
        let video = tracks.filter { $0["type"] as? String == "video" }
        #expect(video.compactMap { $0["width"] as? Int } == [320, 160])
        #expect(video.compactMap { $0["title"] as? String } == ["Test pattern (test-pattern)", "Test pattern (test-pattern)"])
        #expect(tracks.filter { $0["type"] as? String == "audio" }.count == 1)
        let text = try CapctlRun.run(["info", path])
        #expect(text.stdout.contains("\"Test pattern (test-pattern)\""))
    }

    /// `%c`: a file per camera. SIGHUP switches both at once, SIGUSR1 and
    /// SIGUSR2 pause and resume both: the two files of a segment last the
    /// same, and all of them add up to the recording's duration.
    @Test func aFilePerCameraSwitchesAndPausesTogether() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.cameras + ["--max-duration", "3", "cam%c-%n.mp4"], in: scratch.url)
        let started = try recorder.waitFor { $0["event"] as? String == "started" }
        #expect(started["files"] as? [String] == ["cam1-1.mp4", "cam2-1.mp4"])
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= 1 }
        recorder.signal(SIGHUP)
        try recorder.waitFor { $0["event"] as? String == "segment" && $0["file"] as? String == "cam2-1.mp4" }
        recorder.signal(SIGUSR1)
        try recorder.waitFor { $0["event"] as? String == "paused" }
        usleep(500_000)
        recorder.signal(SIGUSR2)
        try recorder.waitFor { $0["event"] as? String == "resumed" }
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let event = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        #expect(event["reason"] as? String == "max-duration")
        #expect(event["files"] as? [String] == ["cam1-1.mp4", "cam2-1.mp4", "cam1-2.mp4", "cam2-2.mp4"])
        #expect(scratch.contents == ["cam1-1.mp4", "cam1-2.mp4", "cam2-1.mp4", "cam2-2.mp4"])

        let segments = recorder.events.filter { $0["event"] as? String == "segment" }
        var total = 0.0
        for number in 1...2 {
            let pair = try ["cam1-\(number).mp4", "cam2-\(number).mp4"].map { try mediaInfo(scratch.file($0)) }
            let durations = pair.compactMap { $0["duration"] as? Double }
            try #require(durations.count == 2)
            #expect(abs(durations[0] - durations[1]) <= 0.0015, "segment \(number): \(durations)")
            total += durations[0]
            for name in ["cam1-\(number).mp4", "cam2-\(number).mp4"] {
                let reported = try #require(segments.first { $0["file"] as? String == name })
                // The frames that play, as libavformat reads the edit lists:
                // those written, also in the second segment, which was paused
                // and resumed (a camera whose first frame after the resume
                // comes after the resume point holds its picture before it).
                let playing = try #require(track(try mediaInfo(scratch.file(name)), "video")?["frames"] as? Int)
                let written = try #require(reported["frames"] as? Int)
                #expect(written == playing, "\(name): \(playing) frames play, reported \(reported)")
            }
        }
        #expect(abs(total - 3) <= 0.0015 * 2, "the files last \(total) s")
        #expect(segments.compactMap { $0["frames"] as? Int }.reduce(0, +) == event["frames"] as? Int)
        #expect(segments.compactMap { $0["bytes"] as? Int }.reduce(0, +) == event["bytes"] as? Int)
    }

    /// --max-size counts every camera's file: together they stay under it.
    @Test func maxSizeCountsEveryFile() throws {
        let scratch = try RecordScratch()
        let limit = 400 * 1024
        let result = try CapctlRun.run(["record", "--progress", "json", "--video", "test-pattern,size=640x360", "--video", "test-pattern,size=640x360",
                                        "--crf", "0", "--preset", "ultrafast", "--max-size", "400K", "--max-duration", "30", "cam%c.mp4"],
                                       in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["reason"] as? String == "max-size")
        let sizes = try ["cam1.mp4", "cam2.mp4"].map { name -> Int in
            let attributes = try FileManager.default.attributesOfItem(atPath: scratch.file(name))
            return (attributes[.size] as? Int) ?? 0
        }
        #expect(sizes.reduce(0, +) <= limit, "files of \(sizes) bytes")
        #expect(sizes.reduce(0, +) == event["bytes"] as? Int)
        #expect(sizes.allSatisfy { $0 > 50 * 1024 })
    }
}
