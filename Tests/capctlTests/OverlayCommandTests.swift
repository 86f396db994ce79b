import Foundation
import Testing

/// `record --overlay`: the time burned into a frame, read back from the
/// file by text recognition (tesseract), is the time that frame was
/// captured; and the overlay is refused where it cannot be drawn.
struct OverlayCommandTests {
    static let tesseract = "/usr/bin/tesseract"
    static let ffmpeg = "/usr/bin/ffmpeg"

    /// Runs a tool, its stdout as text; stderr is left out.
    static func tool(_ path: String, _ arguments: [String]) throws -> String {
        String(decoding: try toolData(path, arguments), as: UTF8.self)
    }

    /// Runs a tool, its stdout as bytes; stderr is left out.
    static func toolData(_ path: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "\(path) \(arguments.joined(separator: " ")) failed")
        return data
    }

    /// Seconds since 1970 of an ISO 8601 UTC time as events give it (`2024-05-01T12:00:00.123Z`).
    static func seconds(ofEventTime text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)?.timeIntervalSince1970
    }

    /// Seconds since 1970 of the `YYYY-MM-DD HH:MM:SS` (UTC) that recognition read in `text`, O read as 0.
    static func seconds(ofRecognized text: String) -> Double? {
        let cleaned = String(text.map { $0 == "O" || $0 == "o" ? "0" : $0 })
        guard let match = cleaned.firstMatch(of: /(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)/) else { return nil }
        let iso = "\(match.1)-\(match.2)-\(match.3)T\(match.4):\(match.5):\(match.6)Z"
        return ISO8601DateFormatter().date(from: iso)?.timeIntervalSince1970
    }

    /// Records `video` with the time burned in (TZ=UTC, so local time is UTC),
    /// reads frame 30 back, and checks that its text is the time the events
    /// say the recording's first frame was captured, plus one second, within one second.
    func checkBurnedInTime(video: String, in scratch: RecordScratch) throws {
        let out = scratch.file("rec.mp4")
        let run = try CapctlRun.run(["record", "--video", video, "--overlay", "%Y-%m-%d %H:%M:%S", "--max-duration", "2", "--json", out],
                                    environment: ["TZ": "UTC"])
        #expect(run.status == 0, "\(run.stderr)")
        let segment = try #require(run.stdout.split(separator: "\n").first { $0.contains("\"event\":\"segment\"") })
        let event = try #require(try JSONSerialization.jsonObject(with: Data(segment.utf8)) as? [String: Any])
        let start = try #require((event["start"] as? String).flatMap(Self.seconds(ofEventTime:)))
        // Frame 30 of a 30 fps camera is one second in. The box of 19 characters at 720p:
        // glyphs scaled 5 times, at 10,10, 586x56. Dark text on light, softened and halved, reads best.
        let png = scratch.file("frame.png")
        _ = try Self.tool(Self.ffmpeg, ["-v", "error", "-nostdin", "-i", out, "-vf", "select=eq(n\\,30),crop=586:56:10:10,negate,gblur=sigma=3,scale=iw/2:ih/2",
                                        "-frames:v", "1", png])
        let text = try Self.tool(Self.tesseract, [png, "-", "--psm", "7"])
        let shown = try #require(Self.seconds(ofRecognized: text), "recognized '\(text)'")
        #expect(abs(shown - (start + 1)) <= 1.0, "frame 30 shows '\(text)', the first frame was captured at \(segment)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: tesseract) && FileManager.default.isExecutableFile(atPath: ffmpeg)))
    func timeOnABrightPicture() throws {
        let scratch = try RecordScratch()
        try checkBurnedInTime(video: "test-pattern,size=1280x720", in: scratch)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: tesseract) && FileManager.default.isExecutableFile(atPath: ffmpeg)))
    func timeOnADarkPicture() throws {
        let scratch = try RecordScratch()
        // Y4M: a file: input that delivers raw frames.
        let black = scratch.file("black.y4m")
        _ = try Self.tool(Self.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=black:size=1280x720:rate=30", "-t", "3",
                                        "-pix_fmt", "yuv420p", black])
        try checkBurnedInTime(video: "file:" + black, in: scratch)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: tesseract) && FileManager.default.isExecutableFile(atPath: ffmpeg)))
    func eachCameraItsOwnTextWithCommas() throws {
        let scratch = try RecordScratch()
        let out = scratch.file("door.mp4")
        let run = try CapctlRun.run(["record", "--video", "test-pattern,size=640x480,overlay=DOOR, LEFT", "--overlay-position", "bottom-right",
                                     "--max-duration", "1", "--json", out])
        #expect(run.status == 0, "\(run.stderr)")
        // 10 characters at 480p (scale 3): 186x34 at 640-6-186=448, 480-6-34=440.
        let png = scratch.file("frame.png")
        _ = try Self.tool(Self.ffmpeg, ["-v", "error", "-nostdin", "-i", out, "-vf", "select=eq(n\\,5),crop=186:34:448:440,negate,scale=iw*2:ih*2",
                                        "-frames:v", "1", png])
        let text = try Self.tool(Self.tesseract, [png, "-", "--psm", "7"])
        // The comma stayed in the text (else " LEFT" would have been refused as a camera option); recognition reads it as ',' or ':'.
        #expect(text.uppercased().contains("DOOR") && text.uppercased().contains("LEFT"), "recognized '\(text)'")
    }

    @Test(arguments: [
        (["--video", "test-pattern", "--overlay", "%H:%M:%S", "--video-codec", "copy", "out.mp4"],
         "--video-codec copy writes the camera's frames untouched and the overlay draws into frames before they are encoded"),
        (["--video", "test-pattern,overlay=%T", "--video-codec", "copy", "out.mp4"], "--video-codec copy"),
        (["--video", "test-pattern", "--overlay-position", "top-right", "out.mp4"], "--overlay-position places the overlay's text"),
        (["--video", "test-pattern", "--overlay", "", "out.mp4"], "--overlay is empty"),
        (["--video", "test-pattern", "--overlay", "Tür", "out.mp4"], "printable ASCII only"),
        (["--video", "test-pattern", "--overlay", "x", "--overlay-position", "middle", "out.mp4"], "'middle' is invalid for '--overlay-position"),
    ])
    func refused(arguments: [String], message: String) throws {
        let scratch = try RecordScratch()
        let run = try CapctlRun.run(["record"] + arguments, in: scratch.url)
        #expect(run.status == 64)
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(scratch.contents.isEmpty)
    }

    /// A camera that sends MJPEG: its frames are decoded and get the text.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: tesseract) && FileManager.default.isExecutableFile(atPath: ffmpeg)))
    func timeOnAnMJPEGCamerasDarkPicture() throws {
        let scratch = try RecordScratch()
        let black = scratch.file("black.mkv")
        _ = try Self.tool(Self.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=black:size=1280x720:rate=30", "-t", "3",
                                        "-c:v", "mjpeg", "-pix_fmt", "yuvj422p", black])
        try checkBurnedInTime(video: "file:" + black, in: scratch)
    }

    /// A camera that sends H.264 (here with its configuration out of band, as an MP4 keeps it).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: tesseract) && FileManager.default.isExecutableFile(atPath: ffmpeg)))
    func timeOnAnH264CamerasBrightPicture() throws {
        let scratch = try RecordScratch()
        let bright = scratch.file("bright.mp4")
        _ = try Self.tool(Self.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-t", "3",
                                        "-c:v", "libx264", "-preset", "ultrafast", "-g", "15", "-pix_fmt", "yuv420p", bright])
        try checkBurnedInTime(video: "file:" + bright, in: scratch)
    }

    /// Raw frames the overlay cannot draw into (more than 8 bits a sample) are refused before any file is made.
    @Test func aFormatItCannotDrawIntoIsRefusedBeforeAFileIsMade() throws {
        let scratch = try RecordScratch()
        let deep = scratch.file("deep.y4m")
        _ = try Self.tool(Self.ffmpeg, ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "1",
                                        "-pix_fmt", "yuv420p10le", "-strict", "-1", deep])
        let run = try CapctlRun.run(["record", "--video", "file:" + deep, "--overlay", "%T", "--max-duration", "1", scratch.file("out.mp4")])
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("the overlay can neither draw into nor decode"), "\(run.stderr)")
        #expect(!scratch.contents.contains("out.mp4"))
    }
}
