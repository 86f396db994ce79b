import Foundation
import Testing

/// `formats` and `controls` on the virtual devices: what they offer, in the
/// shapes a camera's or microphone's take, and no "no device".
struct VirtualDeviceCommandTests {
    static func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try CapctlRun.run(arguments)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty)
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test(arguments: ["test-pattern", "virtual:test-pattern"])
    func formatsOfTheTestPattern(_ name: String) throws {
        let result = try CapctlRun.run(["formats", name])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "Test pattern  test-pattern  (virtual:test-pattern)")
        #expect(lines.dropFirst().first == "active: YU12 640x480  30 fps (33.333 ms)")
        #expect(lines.contains("[0] YU12    Planar YUV 4:2:0 (yuv420p)"))
        #expect(lines.contains("[3] RGB3    24-bit RGB 8-8-8 (rgb24)"))
        #expect(lines.contains("    stepwise 16x16 to 7680x4320, step 2x2"))
        #expect(lines.contains("    continuous 16x16 to 7680x4320"))
        #expect(lines.contains("        at 7680x4320: 0.1 fps (10000 ms) to 1000 fps (1 ms), continuous"))
    }

    @Test func formatsOfTheTestPatternAsJSON() throws {
        let document = try Self.json(["formats", "test-pattern", "--json"])
        let device = try #require(document["device"] as? [String: Any])
        #expect(device["virtual"] as? Bool == true)
        #expect(device["path"] as? String == "test-pattern")
        #expect(device["index"] is NSNull)
        let active = try #require(document["active"] as? [String: Any])
        #expect(active["fourcc"] as? String == "YU12")
        #expect(active["width"] as? Int == 640 && active["height"] as? Int == 480)
        let formats = try #require(document["formats"] as? [[String: Any]])
        #expect(formats.map { $0["fourcc"] as? String } == ["YU12", "NV12", "YUYV", "RGB3"])
        let sizes = try #require(formats[0]["sizes"] as? [[String: Any]])
        #expect(sizes.first?["type"] as? String == "stepwise")
        #expect((sizes.first?["max"] as? [String: Any])?["width"] as? Int == 7680)
        let intervals = try #require(sizes.first?["intervals"] as? [String: Any])
        #expect(intervals["type"] as? String == "continuous")
        #expect((intervals["min"] as? [String: Any])?["fps"] as? Double == 1000)
    }

    @Test func formatsOfTheTestTone() throws {
        let result = try CapctlRun.run(["formats", "test-tone:20000"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout == """
            Test tone (20000 Hz)  test-tone:20000  (virtual:test-tone:20000)
            S16_LE       rates 40050–192000 Hz, channels 1–2; common rates 44100, 48000, 88200, 96000, 176400, 192000

            """)
        let document = try Self.json(["formats", "test-tone", "--json"])
        let formats = try #require(document["formats"] as? [[String: Any]])
        #expect(formats.count == 1)
        #expect(formats[0]["sampleFormat"] as? String == "S16_LE")
        #expect((formats[0]["rates"] as? [String: Any])?["min"] as? Int == 8000)
        #expect((formats[0]["channels"] as? [String: Any])?["max"] as? Int == 2)
        #expect((document["device"] as? [String: Any])?["mediaType"] as? String == "audio")
    }

    @Test func formatsOfAFileAreTheFormatItsFramesComeIn() throws {
        let scratch = try RecordScratch()
        #expect(try testPatternClip(["-frames:v", "5", "-c:v", "libx264", "-g", "15", "-bf", "0", scratch.file("clip.h264")]).status == 0)
        let result = try CapctlRun.run(["formats", "file:clip.h264"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("File clip.h264  file:clip.h264  (virtual:file:clip.h264)\nactive: H264 320x240  30 fps (33.333 ms)\n"))
        #expect(result.stdout.contains("[0] H264    h264, as stored (raw H.264 video)  (compressed)\n    320x240     30 fps (33.333 ms)"))
        let document = try Self.json(["formats", "file:" + scratch.file("clip.h264"), "--json"])
        let formats = try #require(document["formats"] as? [[String: Any]])
        #expect(formats.first?["fourcc"] as? String == "H264")
        #expect(formats.first?["compressed"] as? Bool == true)
    }

    @Test(arguments: [
        (["formats", "file:/nonexistent/clip.mp4"], Int32(66), "/nonexistent/clip.mp4: no such file to replay"),
        (["formats", "file:/etc/hostname"], 65, "/etc/hostname: not a media file"),
        (["formats", "test-pattern", "--libv4l2"], 64, "--libv4l2 applies to V4L2 cameras; test-pattern is a virtual camera"),
        (["formats", "virtual:nothing"], 66, "virtual:nothing: no such virtual device"),
        (["controls", "test-tone"], 65, "test-tone: not a video capture device (it is a virtual microphone)"),
        (["controls", "test-pattern", "brightness"], 64, "test-pattern: no control named 'brightness'; a virtual camera has no controls"),
        (["controls", "file:/nonexistent/clip.mp4"], 66, "/nonexistent/clip.mp4: no such file to replay"),
    ])
    func refusals(arguments: [String], status: Int32, message: String) throws {
        let result = try CapctlRun.run(arguments)
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.hasPrefix("capctl: error: \(message)"), "stderr: \(result.stderr)")
    }

    @Test func aVirtualCameraHasNoControls() throws {
        let result = try CapctlRun.run(["controls", "test-pattern"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout == """
            Test pattern  test-pattern  (virtual:test-pattern)

            no controls

            Camera features
              focus            not supported
              exposure         not supported
              white balance    not supported
              zoom             not supported
              low-light boost  not supported

            """)
        let document = try Self.json(["controls", "virtual:test-pattern", "--json"])
        #expect(Set(document.keys) == ["device", "classes", "features"])
        #expect((document["classes"] as? [Any])?.isEmpty == true)
        #expect((document["device"] as? [String: Any])?["uniqueID"] as? String == "virtual:test-pattern")
        let features = try #require(document["features"] as? [String: Any])
        #expect((features["zoom"] as? [String: Any])?["supported"] as? Bool == false)
        #expect((features["focus"] as? [String: Any])?["modes"] as? [String] == [])
    }
}
