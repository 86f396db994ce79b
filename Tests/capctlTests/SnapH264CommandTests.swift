import Foundation
import Testing

/// `capctl snap` from an H.264 (or HEVC) camera, played from raw Annex B files as a
/// camera delivers them: the photo is decoded from the keyframe before it
/// (and is that frame's picture, as ffmpeg decodes it), a stream joined in
/// the middle of a GOP waits for its first IDR, a raw photo is the access
/// unit as it came, and a live photo's movie plays.
@Suite struct SnapH264CommandTests {
    typealias Scratch = SnapCommandTests.Scratch

    /// `frames` frames of testsrc2 (320x240, 30 fps, or `rate`) as raw H.264 (or HEVC), a
    /// keyframe every 15 frames; with `cut`, the same stream without its first 5 access units
    /// (it starts mid-GOP, at frame 5).
    static func clip(in scratch: Scratch, frames: Int = 45, rate: Int = 30, codec: String = "h264", cut: Bool = false) throws -> String {
        let whole = scratch.file("clip-\(frames)-\(rate).\(codec)")
        if !FileManager.default.fileExists(atPath: whole) {
            let encoder = codec == "hevc" ? ["-c:v", "libx265", "-x265-params", "keyint=15:min-keyint=15:bframes=0:log-level=error"]
                : ["-c:v", "libx264", "-g", "15", "-bf", "0"]
            let made = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=\(rate)",
                                              "-frames:v", "\(frames)"] + encoder + [whole])
            try #require(made.status == 0)
        }
        guard cut else { return whole }
        let part = scratch.file("cut-\(frames)-\(rate).\(codec)")
        try #require(try runTool("ffmpeg", ["-v", "error", "-nostdin", "-i", whole, "-c", "copy", "-bsf:v", "noise=drop=lt(n\\,5)", part]).status == 0)
        return part
    }

    /// The luma of a picture as ffmpeg decodes it: frame `index` of a stream, or an image file.
    static func luma(_ path: String, frame index: Int = 0, in scratch: Scratch) throws -> [UInt8] {
        let out = scratch.file("luma-\(UUID().uuidString).gray")
        let result = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-i", path, "-vf", "select=eq(n\\,\(index))", "-frames:v", "1",
                                           "-f", "rawvideo", "-pix_fmt", "gray", out])
        try #require(result.status == 0)
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: out)))
    }

    static func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return .infinity }
        return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
    }

    /// The photo is frame `index` of `clip`: nearer to it than to the frames beside it, and close.
    static func expectPicture(_ photo: String, isFrame index: Int, of clip: String, in scratch: Scratch) throws {
        let picture = try luma(photo, in: scratch)
        #expect(picture.count == 320 * 240)
        let own = meanDifference(picture, try luma(clip, frame: index, in: scratch))
        let before = meanDifference(picture, try luma(clip, frame: index - 1, in: scratch))
        let after = meanDifference(picture, try luma(clip, frame: index + 1, in: scratch))
        #expect(own < 3, "photo against frame \(index): \(own)")
        #expect(own * 2 < min(before, after), "frame \(index): \(own), beside it: \(before), \(after)")
    }

    /// Every event of one request, once each, in order.
    static func expectOneRequest(_ events: [[String: Any]], live: Bool = false) {
        var expected = ["willBeginCapture", "willCapturePhoto", "didCapturePhoto", "didFinishProcessingPhoto"]
        if live { expected.append("didFinishProcessingLivePhotoMovie") }
        expected += ["didFinishCapture", "finished"]
        #expect(events.map { $0["event"] as? String } == expected)
        #expect(Set(events.dropLast().compactMap { $0["uniqueID"] as? Int }).count == 1)
        #expect(events.dropLast().allSatisfy { ["H264", "HEVC"].contains($0["fourcc"] as? String) })
        #expect(events.dropLast().allSatisfy { ($0["passthrough"] as? Bool) == ($0["format"] as? String == "raw") })
        #expect(events.last?["photos"] as? Int == 1 && events.last?["failed"] as? Int == 0)
    }

    @Test(arguments: [("mid.jpg", "mjpeg"), ("mid.png", "png")])
    func aFrameInTheMiddleOfAGOPBecomesAPhotoOfItsOwnPicture(_ name: String, _ codec: String) throws {
        let scratch = try Scratch()
        let clip = try Self.clip(in: scratch)
        let out = scratch.file(name)
        let result = try CapctlRun.run(["snap", "--video", "file:" + clip, "--warmup", "7f", "--json", out])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty)
        let events = try SnapCommandTests.events(result.stdout)
        Self.expectOneRequest(events)
        let photo = try #require(events.first { $0["event"] as? String == "didFinishProcessingPhoto" })
        #expect(photo["sequence"] as? Int == 7)
        #expect(photo["width"] as? Int == 320 && photo["height"] as? Int == 240)
        #expect(photo["bytes"] as? Int == (try? Data(contentsOf: URL(fileURLWithPath: out)))?.count)
        let probe = try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", out])
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(codec),320,240")
        try Self.expectPicture(out, isFrame: 7, of: clip, in: scratch)
    }

    @Test(arguments: ["h264", "hevc"])
    func aStreamJoinedMidGOPWaitsForItsFirstIDR(_ codec: String) throws {
        let scratch = try Scratch()
        let clip = try Self.clip(in: scratch, codec: codec)
        let cut = try Self.clip(in: scratch, codec: codec, cut: true)
        let out = scratch.file("first.png")
        let result = try CapctlRun.run(["snap", "--video", "file:" + cut, "--warmup", "0", "--json", out])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = try SnapCommandTests.events(result.stdout)
        Self.expectOneRequest(events)
        // Access units 0 to 9 of the cut stream (frames 5 to 14) refer to pictures it
        // never had; the photo is its first IDR, frame 15 of the whole clip.
        let photo = try #require(events.first { $0["event"] as? String == "didFinishProcessingPhoto" })
        #expect(photo["sequence"] as? Int == 10)
        try Self.expectPicture(out, isFrame: 15, of: clip, in: scratch)
    }

    @Test func aRawPhotoIsTheAccessUnitAsItCame() throws {
        let scratch = try Scratch()
        let cut = try Self.clip(in: scratch, cut: true)
        let out = scratch.file("unit.raw")
        let result = try CapctlRun.run(["snap", "--video", "file:" + cut, "--warmup", "0", "--json", out])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = try SnapCommandTests.events(result.stdout)
        Self.expectOneRequest(events)
        #expect(events.first?["passthrough"] as? Bool == true)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: out)))
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + ".json"))) as? [String: Any])
        #expect(sidecar["pixelFormat"] as? String == "h264")
        #expect(sidecar["fourcc"] as? String == "H264")
        #expect(sidecar["keyframe"] as? Bool == true)
        #expect(sidecar["bytesPerLine"] as? Int == 0)
        #expect(sidecar["byteCount"] as? Int == bytes.count)
        #expect(sidecar["sequence"] as? Int == 10)
        // An Annex B access unit that decodes on its own, to a picture of the camera's size.
        #expect(bytes.starts(with: [0, 0, 0, 1]) || bytes.starts(with: [0, 0, 1]))
        let probe = try runTool("ffprobe", ["-v", "error", "-f", "h264", "-count_frames", "-show_entries", "stream=nb_read_frames,width,height",
                                            "-of", "csv=p=0", out])
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "320,240,1")
    }

    @Test func aLivePhotoFromAnH264Camera() throws {
        let scratch = try Scratch()
        // 20 fps: frame times are whole milliseconds.
        let cut = try Self.clip(in: scratch, frames: 100, rate: 20, cut: true)
        let out = scratch.file("moment.jpg")
        // The first IDR is access unit 10 (frame 15); the photo waits until the movie
        // has its first 1.5 s (30 frames) after it: access unit 40, in a movie of 10 to 70.
        let result = try CapctlRun.run(["snap", "--video", "file:" + cut, "--warmup", "0", "--live", "--json", out])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = try SnapCommandTests.events(result.stdout)
        Self.expectOneRequest(events, live: true)
        let movie = try #require(events.first { $0["event"] as? String == "didFinishProcessingLivePhotoMovie" })
        let path = try #require(movie["path"] as? String)
        #expect(path == scratch.file("moment.mov"))
        let frames = try #require(movie["frames"] as? Int)
        let probe = try runTool("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=codec_name,width,height,nb_read_frames",
                                            "-of", "csv=p=0", path])
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,240,\(frames)")
        let photo = try #require(events.first { $0["event"] as? String == "didFinishProcessingPhoto" })
        #expect(photo["sequence"] as? Int == 40)
        #expect(frames == 61)
        #expect(abs((movie["duration"] as? Double ?? 0) - 61.0 / 20) < 0.001)
        #expect(abs((movie["photoDisplayTime"] as? Double ?? 0) - 1.5) < 0.001)
        // The movie starts at the IDR: its first picture is frame 15 of the whole clip.
        let clip = try Self.clip(in: scratch, frames: 100, rate: 20)
        let first = try Self.luma(path, in: scratch)
        #expect(Self.meanDifference(first, try Self.luma(clip, frame: 15, in: scratch)) < 4)
        try Self.expectPicture(out, isFrame: 45, of: clip, in: scratch)
    }
}
