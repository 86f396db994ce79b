import Foundation
import Testing

/// `capctl snap` against the test pattern and an MJPEG file played as a
/// camera: formats, events, bursts, and bad input (one line on stderr, the
/// documented status, nothing created).
@Suite struct SnapCommandTests {
    final class Scratch {
        let path: String
        init() throws {
            var template = Array((NSTemporaryDirectory() + "/capctl-snap-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            path = String(cString: made)
        }
        func file(_ name: String) -> String { path + "/" + name }
        var contents: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    static func events(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test(arguments: [
        (["--count", "0", "x.jpg"], Int32(64), "--count 0"),
        (["--interval=-1", "--count", "2", "x.jpg"], 64, "--interval"),
        (["x.gif"], 64, "cannot tell the photo format"),
        (["bad-%q.jpg"], 64, "%q is not a field"),
        (["--format", "tiff", "x.jpg"], 64, "tiff"),
        (["--quality", "0", "x.jpg"], 64, "--quality 0"),
        (["--quality", "80", "x.png"], 64, "--quality applies to JPEG"),
        (["--size", "123x77", "x.jpg"], 64, "test-pattern"),
        (["--pixel-format", "MJPG", "x.jpg"], 64, "not drawn in MJPG"),
        (["--flash", "on", "x.jpg"], 64, "no flash"),
        (["--flash", "sometimes", "x.jpg"], 64, "sometimes"),
        (["--warmup", "soon", "x.jpg"], 64, "--warmup"),
        (["--interval", "1", "x.jpg"], 64, "--interval needs --count"),
    ])
    func badInputFailsWithOneLineAndCreatesNothing(arguments: [String], status: Int32, message: String) throws {
        let scratch = try Scratch()
        let args = ["snap", "--video", "test-pattern"] + arguments.map { $0.hasSuffix(".jpg") || $0.hasSuffix(".png") || $0.hasSuffix(".gif") ? scratch.file($0) : $0 }
        let result = try CapctlRun.run(args)
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.hasPrefix("capctl: error: "))
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(scratch.contents.isEmpty)
    }

    @Test func anExistingOutputIsLeftUntouched() throws {
        let scratch = try Scratch()
        let out = scratch.file("taken.jpg")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: out))
        let result = try CapctlRun.run(["snap", "--video", "test-pattern", out])
        #expect(result.status == 73)
        #expect(result.stderrLines.count == 1 && result.stderr.contains("already exists"))
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "precious")
        #expect(scratch.contents == ["taken.jpg"])

        // A raw photo's description counts as an output too.
        try Data("{}".utf8).write(to: URL(fileURLWithPath: scratch.file("frame.raw.json")))
        let raw = try CapctlRun.run(["snap", "--video", "test-pattern", scratch.file("frame.raw")])
        #expect(raw.status == 73)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("frame.raw")))
    }

    @Test func aMissingDirectoryCannotBeCreated() throws {
        let result = try CapctlRun.run(["snap", "--video", "test-pattern", "/nonexistent-dir/x.jpg"])
        #expect(result.status == 73)
        #expect(result.stderrLines.count == 1)
    }

    @Test func aLowerQualityMakesASmallerJPEG() throws {
        let scratch = try Scratch()
        var sizes: [Int] = []
        for quality in [10, 50, 95] {
            let name = scratch.file("q\(quality).jpg")
            let result = try CapctlRun.run(["snap", "--video", "test-pattern", "--size", "640x480", "--warmup", "0", "--quality", String(quality), name])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            sizes.append((try? Data(contentsOf: URL(fileURLWithPath: name)).count) ?? 0)
        }
        #expect(sizes[0] < sizes[1] && sizes[1] < sizes[2], "JPEG sizes at quality 10, 50, 95: \(sizes)")
    }

    @Test func jpegPngAndRawWithTheirEventsInOrder() throws {
        let scratch = try Scratch()
        for (name, magic) in [("a.jpg", [UInt8]([0xFF, 0xD8])), ("b.png", [0x89, 0x50, 0x4E, 0x47])] {
            let result = try CapctlRun.run(["snap", "--video", "test-pattern", "--size", "320x240", "--warmup", "2f", "--json", scratch.file(name)])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stderr.isEmpty)
            let events = try Self.events(result.stdout)
            #expect(events.map { $0["event"] as? String } == ["willBeginCapture", "willCapturePhoto", "didCapturePhoto",
                                                             "didFinishProcessingPhoto", "didFinishCapture", "finished"])
            let ids = Set(events.dropLast().compactMap { $0["uniqueID"] as? Int })
            #expect(ids.count == 1)
            let photo = events[3]
            #expect(photo["width"] as? Int == 320 && photo["height"] as? Int == 240)
            #expect(photo["path"] as? String == scratch.file(name))
            let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch.file(name))))
            #expect(data.starts(with: magic))
            #expect(photo["bytes"] as? Int == data.count)
        }
        let raw = try CapctlRun.run(["snap", "--video", "test-pattern", "--size", "320x240", "--pixel-format", "YUYV", "--warmup", "0", scratch.file("c.raw")])
        #expect(raw.status == 0, "stderr: \(raw.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: scratch.file("c.raw")))
        #expect(bytes.count == 320 * 240 * 2)
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: scratch.file("c.raw.json")))) as? [String: Any])
        #expect(sidecar["fourcc"] as? String == "YUYV")
        #expect(sidecar["width"] as? Int == 320 && sidecar["height"] as? Int == 240 && sidecar["bytesPerLine"] as? Int == 640)
        #expect(sidecar["byteCount"] as? Int == bytes.count)
    }

    @Test func mjpegFramesAreWrittenAsTheyCame() throws {
        let scratch = try Scratch()
        // Three distinct JPEG frames as a raw MJPEG stream.
        let clip = scratch.file("clip.mjpeg")
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10", "-frames:v", "3", "-c:v", "mjpeg", "-f", "mjpeg", clip]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)
        let stream = try [UInt8](Data(contentsOf: URL(fileURLWithPath: clip)))

        let result = try CapctlRun.run(["snap", "--video", "file:" + clip, "--warmup", "0", "--json", scratch.file("p.jpg")])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = try Self.events(result.stdout)
        #expect(events.first?["passthrough"] as? Bool == true)
        #expect(events.first?["fourcc"] as? String == "MJPG")
        let photo = try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch.file("p.jpg"))))
        // The photo is the first frame of the stream, byte for byte.
        #expect(photo.count > 100 && Array(stream.prefix(photo.count)) == photo)

        // PNG from MJPEG decodes it.
        let png = try CapctlRun.run(["snap", "--video", "file:" + clip, "--warmup", "0", scratch.file("p.png")])
        #expect(png.status == 0, "stderr: \(png.stderr)")
    }

    @Test func aBurstWritesNFilesWithRisingTimestamps() throws {
        let scratch = try Scratch()
        let result = try CapctlRun.run(["snap", "--video", "test-pattern", "--size", "160x120", "--warmup", "0", "--count", "4",
                                        "--json", scratch.file("shot-%2n.jpg")])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(scratch.contents == ["shot-01.jpg", "shot-02.jpg", "shot-03.jpg", "shot-04.jpg"])
        let events = try Self.events(result.stdout)
        let captured = events.filter { $0["event"] as? String == "didCapturePhoto" }
        let times = captured.compactMap { $0["timestamp"] as? Double }
        #expect(times.count == 4 && times == times.sorted() && Set(times).count == 4)
        let ids = captured.compactMap { $0["uniqueID"] as? Int }
        #expect(Set(ids).count == 4)
        for id in ids {
            let names = events.filter { $0["uniqueID"] as? Int == id }.compactMap { $0["event"] as? String }
            #expect(names == ["willBeginCapture", "willCapturePhoto", "didCapturePhoto", "didFinishProcessingPhoto", "didFinishCapture"])
        }
        #expect(events.last?["photos"] as? Int == 4)

        // A time-lapse spaces them by the interval; a second run never overwrites.
        let lapse = try CapctlRun.run(["snap", "--video", "test-pattern", "--size", "160x120", "--warmup", "0", "--count", "3",
                                       "--interval", "200ms", "--json", scratch.file("lapse.png")])
        #expect(lapse.status == 0, "stderr: \(lapse.stderr)")
        let lapseTimes = try Self.events(lapse.stdout).filter { $0["event"] as? String == "didCapturePhoto" }.compactMap { $0["timestamp"] as? Double }
        #expect(lapseTimes.count == 3)
        if lapseTimes.count == 3 { #expect(lapseTimes[2] - lapseTimes[0] >= 0.35) }
        #expect(scratch.contents.filter { $0.hasPrefix("lapse") } == ["lapse-2.png", "lapse-3.png", "lapse.png"])
        let again = try CapctlRun.run(["snap", "--video", "test-pattern", "--count", "3", scratch.file("shot-%2n.jpg")])
        #expect(again.status == 73)
    }

    @Test func liveWritesAMovieBesideThePhoto() throws {
        let scratch = try Scratch()
        let result = try CapctlRun.run(["snap", "--video", "test-pattern", "--size", "160x120", "--live", "--json", scratch.file("moment.jpg")])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = try Self.events(result.stdout)
        let movie = try #require(events.first { $0["event"] as? String == "didFinishProcessingLivePhotoMovie" })
        #expect(movie["path"] as? String == scratch.file("moment.mov"))
        let display = try #require(movie["photoDisplayTime"] as? Double)
        let duration = try #require(movie["duration"] as? Double)
        #expect(abs(display - 1.5) < 0.1)
        #expect(duration > 2.9 && duration < 3.2)
        #expect(FileManager.default.fileExists(atPath: scratch.file("moment.mov")))
    }
}
