import Foundation
import Glibc
import Testing

/// `record --resume-on motion`: clips made for the purpose with ffmpeg
/// (a still picture, a box crossing it, the picture still again) are played
/// as a camera (file:). Each frame carries its number as a row of black and
/// white blocks at the top left, too small to count as motion, so the
/// recorded files say which frames of the clip they hold.
@Suite(.serialized) struct MotionTriggerCommandTests {
    /// Blocks of the frame number: 12 bits, 8x8 pixels each, along the top.
    static let bits = 12

    /// Makes `seconds` of 320x240 at 30 fps as Y4M: a still gradient with
    /// the frame number drawn in, and a white 60x60 box crossing it during
    /// each range of frames in `movements`.
    static func clip(_ path: String, seconds: Int, movements: [ClosedRange<Int>]) throws {
        let number = "lt(Y\\,8)*lt(X\\,\(bits * 8))"
        let numberBit = "255*mod(floor(N/pow(2\\,floor(X/8)))\\,2)"
        let boxes = movements.map { range in
            "between(N\\,\(range.lowerBound)\\,\(range.upperBound))*between(X\\,20+(N-\(range.lowerBound))*7\\,80+(N-\(range.lowerBound))*7)*between(Y\\,90\\,150)"
        }.joined(separator: "+")
        let luma = "if(\(number)\\,\(numberBit)\\,if(\(boxes.isEmpty ? "0" : boxes)\\,255\\,60+X/4+Y/4))"
        let made = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=gray:size=320x240:rate=30,format=yuv420p",
                                          "-t", "\(seconds)", "-vf", "geq=lum='\(luma)':cb=128:cr=128", "-f", "yuv4mpegpipe", path])
        try #require(made.status == 0)
    }

    /// The clip frame numbers in a recorded file, in the order a player shows them.
    static func clipFrames(_ path: String) throws -> [Int] {
        let gray = path + ".gray"
        defer { unlink(gray) }
        try #require(try runTool("ffmpeg", ["-v", "error", "-nostdin", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", gray]).status == 0)
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: gray)))
        let size = 320 * 240
        return stride(from: 0, to: data.count - size + 1, by: size).map { offset in
            (0..<bits).reduce(0) { number, bit in data[offset + 4 * 320 + 8 * bit + 4] > 128 ? number | 1 << bit : number }
        }
    }

    static func events(_ result: CapctlRun) -> [[String: Any]] {
        result.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    static let trigger = ["--start-paused", "--pre-roll", "1s", "--resume-on", "motion", "--pause-after-still", "1s", "--progress", "json"]

    /// The file begins within one keyframe interval (1 s with a pre-roll)
    /// of 1 s before the box moves, and ends about 1 s after it stops.
    @Test func oneMovementIsRecordedWithItsPreRollUntilASecondOfStillness() throws {
        let scratch = try RecordScratch()
        try Self.clip(scratch.file("move.y4m"), seconds: 9, movements: [150...179])
        let result = try CapctlRun.run(["record", "--video", "file:move.y4m"] + Self.trigger + ["out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = Self.events(result)
        let names = events.compactMap { $0["event"] as? String }.filter { $0 != "progress" }
        #expect(names == ["started", "paused", "motion-started", "resumed", "motion-ended", "paused", "segment", "finished"], "\(names)")
        let causes = events.filter { ["paused", "resumed"].contains($0["event"] as? String) }.compactMap { $0["cause"] as? String }
        #expect(causes == ["start", "motion", "still"])
        let score = try #require(events.first { $0["event"] as? String == "motion-started" }?["score"] as? Double)
        #expect(score >= 1, "score \(score)")

        let frames = try Self.clipFrames(scratch.file("out.mp4"))
        let first = try #require(frames.first), last = try #require(frames.last)
        #expect(frames == Array(first...last), "frames \(first)…\(last) not each once in order")
        // The detector and the keyframe for the resume take a few frames (0.2 s allowed).
        #expect(first >= 150 - 60 - 6 && first <= 150 - 30 + 6, "starts at frame \(first); the box moves at 150")
        #expect(last >= 179 + 30 - 1 && last <= 179 + 30 + 6, "ends at frame \(last); the box stops after 179")
    }

    /// Each movement, with its pre-roll, is a file of its own.
    @Test func twoMovementsWithAFilePerEventGiveTwoFiles() throws {
        let scratch = try RecordScratch()
        try Self.clip(scratch.file("two.y4m"), seconds: 12, movements: [120...149, 270...299])
        let result = try CapctlRun.run(["record", "--video", "file:two.y4m"] + Self.trigger + ["--file-per-event", "event-%n.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(scratch.contents == ["event-1.mp4", "event-2.mp4", "two.y4m"])
        let finished = try #require(Self.events(result).first { $0["event"] as? String == "finished" })
        #expect(finished["files"] as? [String] == ["event-1.mp4", "event-2.mp4"])
        let one = try Self.clipFrames(scratch.file("event-1.mp4")), two = try Self.clipFrames(scratch.file("event-2.mp4"))
        for (frames, movement) in [(one, 120...149), (two, 270...299)] {
            let first = try #require(frames.first), last = try #require(frames.last)
            #expect(frames == Array(first...last))
            #expect(first < movement.lowerBound - 30 + 6 && last > movement.upperBound, "\(first)…\(last) around \(movement)")
        }
        #expect((one.last ?? .max) < (two.first ?? 0))
    }

    /// Sensor-like noise and light that slowly brightens are not motion:
    /// the recording never resumes, and no file is left.
    @Test func noiseAndSlowLightGiveNoFile() throws {
        let scratch = try RecordScratch()
        let made = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=gray:size=320x240:rate=30,format=yuv420p",
                                          "-t", "8", "-vf", "geq=lum='70+X/5+Y/5+N*0.25':cb=128:cr=128,noise=alls=20:allf=t",
                                          "-f", "yuv4mpegpipe", scratch.file("noise.y4m")])
        try #require(made.status == 0)
        let result = try CapctlRun.run(["record", "--video", "file:noise.y4m"] + Self.trigger + ["out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let names = Self.events(result).compactMap { $0["event"] as? String }.filter { $0 != "progress" }
        #expect(names == ["started", "paused", "finished"], "\(names)")
        let finished = try #require(Self.events(result).first { $0["event"] as? String == "finished" })
        #expect(finished["reason"] as? String == "end-of-input")
        #expect(finished["files"] as? [String] == [])
        #expect(scratch.contents == ["noise.y4m"])
    }

    /// The detector reads raw pictures: a camera of compressed ones is refused before anything is written.
    @Test func aCameraOfCompressedPicturesIsRefused() throws {
        let scratch = try RecordScratch()
        let made = try testPatternClip(["-t", "1", "-c:v", "mjpeg", "-f", "mjpeg", scratch.file("clip.mjpeg")])
        try #require(made.status == 0)
        let result = try CapctlRun.run(["record", "--video", "file:clip.mjpeg", "--resume-on", "motion", "out.mp4"], in: scratch.url)
        #expect(result.status == 64)
        #expect(result.stderr.contains("--resume-on motion reads 8-bit luma from raw pictures and this camera sends mjpeg"), "\(result.stderr)")
        #expect(scratch.contents == ["clip.mjpeg"])
    }

    /// Raw pictures without an 8-bit luma (10-bit here) would never start motion: refused too, naming the format.
    @Test func aCameraOfRawPicturesTheDetectorCannotReadIsRefused() throws {
        let scratch = try RecordScratch()
        let made = try testPatternClip(["-t", "1", "-pix_fmt", "yuv420p10le", "-strict", "-1", "-f", "yuv4mpegpipe", scratch.file("deep.y4m")])
        try #require(made.status == 0)
        let result = try CapctlRun.run(["record", "--video", "file:deep.y4m", "--resume-on", "motion", "out.mp4"], in: scratch.url)
        #expect(result.status == 64)
        #expect(result.stderr.contains("this camera sends yuv420p10le pictures; choose a --pixel-format such as YUYV"), "\(result.stderr)")
        #expect(scratch.contents == ["deep.y4m"])
    }
}
