import CaptureKit
import Foundation
import Testing

/// `capctl info` and `capctl frame` on recordings written with CaptureKit
/// whose frames show their own number.
@Suite struct InfoFrameCommandTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    final class Scratch {
        let path: String
        init() throws {
            var template = Array((NSTemporaryDirectory() + "/capctl-frame-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            path = String(cString: made)
        }
        func file(_ name: String) -> String { path + "/" + name }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// A gray frame with the number's 12 low bits as bars across its top half.
    static func numberedFrame(_ number: Int, width: Int = 320, height: Int = 240) throws -> PixelBuffer {
        let buffer = try PixelBuffer(width: width, height: height, pixelFormat: .gray8)
        let stride = buffer.bytesPerRow(plane: 0)
        buffer.withUnsafeMutableBytes(plane: 0) { bytes in
            for y in 0..<height {
                for x in 0..<width {
                    bytes[y * stride + x] = y < height / 2 ? ((number >> (x * 12 / width)) & 1 == 1 ? 235 : 16) : 128
                }
            }
        }
        return buffer
    }

    /// Reads the number back from a binary PPM.
    static func numberInPPM(_ path: String) throws -> (number: Int, width: Int, height: Int) {
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // "P6\nW H\n255\n"
        var fields = [String](), current = "", offset = 0
        while fields.count < 4 && offset < data.count {
            let byte = data[offset]
            offset += 1
            if byte == 0x0A || byte == 0x20 {
                if !current.isEmpty { fields.append(current); current = "" }
            } else {
                current.append(Character(UnicodeScalar(byte)))
            }
        }
        let width = Int(fields[1])!, height = Int(fields[2])!
        var number = 0
        let y = height / 4
        for bit in 0..<12 {
            let x = (2 * bit + 1) * width / 24
            if data[offset + (y * width + x) * 3] > 128 { number |= 1 << bit }
        }
        return (number, width, height)
    }

    /// A 2-second 30 fps H.264 recording with a second session (MP4 with an edit list).
    static func recording(_ path: String) throws {
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 320, height: 240, quality: 20, maxKeyFrameInterval: 12, expectedFrameDuration: frameDuration)))
        let audio = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2)))
        try writer.add(input)
        try writer.add(audio)
        writer.metadata = [.title("numbers")]
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<30 { try input.append(numberedFrame(number), presentationTime: frameDuration * Int64(number)) }
        try writer.endSession(atSourceTime: MediaTime(value: 1, timescale: 1))
        try writer.startSession(atSourceTime: MediaTime(value: 5, timescale: 1))
        for number in 150..<180 { try input.append(numberedFrame(number), presentationTime: frameDuration * Int64(number)) }
        let silence = [Int16](repeating: 0, count: 480 * 2)
        for chunk in 0..<100 {
            try silence.withUnsafeBytes {
                try audio.appendAudio($0, format: .s16, channels: 2, sampleRate: 48000, presentationTime: MediaTime(value: 5, timescale: 1) + MediaTime(value: Int64(chunk), timescale: 100))
            }
        }
        try writer.finishWriting()
    }

    @Test func infoDescribesTracksEditsAndMetadata() throws {
        let scratch = try Scratch()
        let path = scratch.file("numbers.mp4")
        try Self.recording(path)
        let result = try CapctlRun.run(["info", path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(document["duration"] as? Double == 2.0)
        #expect((document["metadata"] as? [String: String])?["title"] == "numbers")
        #expect(document["indexBeforeMedia"] as? Bool == false)
        #expect(document["truncated"] as? Bool == false)
        let tracks = try #require(document["tracks"] as? [[String: Any]])
        #expect(tracks.count == 2)
        let video = tracks[0], audio = tracks[1]
        #expect(video["type"] as? String == "video")
        #expect(video["codec"] as? String == "h264")
        #expect(video["width"] as? Int == 320 && video["height"] as? Int == 240)
        #expect(video["frames"] as? Int == 60)
        #expect(video["pixelFormat"] as? String == "yuv420p")
        #expect(video["enabled"] as? Bool == true)
        let edits = try #require(video["edits"] as? [[String: Any]])
        // The second session's media follows the first's: one edit.
        #expect(edits.map { $0["duration"] as? Double } == [2.0])
        #expect(audio["codec"] as? String == "aac")
        #expect(audio["sampleRate"] as? Int == 48000)
        #expect(audio["channels"] as? Int == 2)
        // The audio starts in the second session: an empty edit first.
        let audioEdits = try #require(audio["edits"] as? [[String: Any]])
        #expect(audioEdits.first?["mediaTime"] is NSNull)
        #expect(audioEdits.first?["duration"] as? Double == 1.0)

        let text = try CapctlRun.run(["info", path])
        #expect(text.status == 0)
        #expect(text.stdout.contains("track 0: video h264"))
        #expect(text.stdout.contains("60 frames"))
        #expect(text.stdout.contains("edits: 0–2 s plays media from"))
        #expect(text.stdout.contains("; enabled"))
    }

    /// Files other programs made: `info` states only the flags the
    /// container has (none in WAV and MPEG-TS, Matroska's default flag in
    /// WebM), and no channel layout beside a bare channel count.
    @Test(arguments: [("tone.wav", ["-c:a", "pcm_s16le"], nil as String?), ("clip.ts", ["-c:v", "mpeg2video", "-c:a", "mp2"], nil),
                      ("clip.webm", ["-c:v", "libvpx", "-c:a", "libopus"], "default")])
    func infoStatesOnlyTheFlagsTheContainerHas(name: String, codecs: [String], flag: String?) throws {
        let scratch = try Scratch()
        let path = scratch.file(name)
        let video = name.hasSuffix(".wav") ? [] : ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=10"]
        let made = try runTool("ffmpeg", ["-v", "error", "-nostdin"] + video + ["-f", "lavfi", "-i", "sine=sample_rate=48000",
                                "-t", "1", "-ac", "1"] + codecs + [path])
        try #require(made.status == 0)
        let text = try CapctlRun.run(["info", path])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(!text.stdout.contains("enabled") && !text.stdout.contains("disabled"), "\(text.stdout)")
        #expect(text.stdout.contains("1 ch") && !text.stdout.contains("1 channels"), "\(text.stdout)")
        let tracks = try #require((try JSONSerialization.jsonObject(with: Data(CapctlRun.run(["info", "--json", path]).stdout.utf8))
                                   as? [String: Any])?["tracks"] as? [[String: Any]])
        for track in tracks {
            #expect(track["enabled"] is NSNull)
            // (ffmpeg's WebM says "not default" of every track.)
            #expect((track["default"] is Bool) == (flag != nil))
        }
        if let flag { #expect(text.stdout.contains(flag), "\(text.stdout)") }
    }

    @Test func frameAtExactAndInBetweenTimes() throws {
        let scratch = try Scratch()
        let path = scratch.file("numbers.mp4")
        try Self.recording(path)
        // (time, the frame on screen): frame n is shown from n/30 s; the
        // second session's frames 150… from 1 s.
        // Times with units are spelled as record's are.
        let cases: [(String, Int)] = [("0", 0), ("0s", 0), ("0.5", 15), ("500ms", 15), ("0.51", 15), ("0.533", 15), ("00:00.534", 16),
                                      ("0.999", 29), ("1", 150), ("1.25", 157), ("1.25s", 157), ("00:00:01.966", 178), ("1.99", 179), ("2", 179)]
        for (index, (time, expected)) in cases.enumerated() {
            let out = scratch.file("at-\(index).ppm")
            let result = try CapctlRun.run(["frame", path, "--at", time, "-o", out])
            #expect(result.status == 0, "\(time): \(result.stderr)")
            let (number, width, height) = try Self.numberInPPM(out)
            #expect(number == expected, "at \(time)")
            #expect(width == 320 && height == 240)
        }
        // Scaled, and as PNG and JPEG.
        let small = scratch.file("small.ppm")
        #expect(try CapctlRun.run(["frame", path, "--at", "0.25", "-o", small, "--size", "160x120"]).status == 0)
        let scaled = try Self.numberInPPM(small)
        #expect(scaled.number == 7 && scaled.width == 160 && scaled.height == 120)
        for name in ["still.png", "still.jpg"] {
            let out = scratch.file(name)
            let result = try CapctlRun.run(["frame", path, "--at", "1.5", "-o", out, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let probe = try CapctlRun.ffprobe(["-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", out])
            #expect(probe.hasPrefix(name.hasSuffix("png") ? "png,320,240" : "mjpeg,320,240"), "\(probe)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let image = try #require((document["images"] as? [[String: Any]])?.first)
            #expect(image["frameTime"] as? Double == 1.5)
        }
    }

    @Test func frameEveryIntervalWritesANumberedSeries() throws {
        let scratch = try Scratch()
        let path = scratch.file("numbers.mp4")
        try Self.recording(path)
        let pattern = scratch.file("thumb-%03d.ppm")
        let result = try CapctlRun.run(["frame", path, "--every", "0.25", "-o", pattern])
        #expect(result.status == 0, "\(result.stderr)")
        let expected = [0, 7, 15, 22, 150, 157, 165, 172]
        for (index, number) in expected.enumerated() {
            let file = scratch.file(String(format: "thumb-%03d.ppm", index + 1))
            #expect(try Self.numberInPPM(file).number == number, "\(file)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("thumb-009.ppm")))
        // Again: the first name exists, so nothing is written at all.
        let again = try CapctlRun.run(["frame", path, "--every", "0.5", "-o", scratch.file("other-%d.ppm")])
        #expect(again.status == 0)
        try FileManager.default.removeItem(atPath: scratch.file("other-4.ppm"))
        try FileManager.default.removeItem(atPath: scratch.file("other-1.ppm"))
        let clash = try CapctlRun.run(["frame", path, "--every", "0.5", "-o", scratch.file("other-%d.ppm")])
        #expect(clash.status == 73)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("other-1.ppm")))
    }

    @Test func badInputGivesOneLineAndTheDocumentedStatus() throws {
        let scratch = try Scratch()
        let path = scratch.file("numbers.mp4")
        try Self.recording(path)
        let existing = scratch.file("taken.png")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: existing))
        let notMedia = scratch.file("notes.txt")
        try Data("just some text, not a video\n".utf8).write(to: URL(fileURLWithPath: notMedia))
        let truncated = scratch.file("cut.mp4")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        let audioOnly = scratch.file("tone.wav")
        let writer = try AssetWriter(outputPath: audioOnly)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .pcm(.s16), sampleRate: 8000, channels: 1)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try [Int16](repeating: 0, count: 800).withUnsafeBytes { try input.appendAudio($0, format: .s16, channels: 1, sampleRate: 8000, presentationTime: .zero) }
        try writer.finishWriting()

        let cases: [([String], Int32, String)] = [
            (["info", scratch.file("missing.mp4")], 66, "missing.mp4: no such file"),
            (["info", notMedia], 65, "notes.txt: not a media file"),
            (["info", scratch.path], 65, "not a regular file"),
            (["info", truncated], 65, "cut.mp4: damaged or truncated"),
            (["frame", path, "--at", "3", "-o", scratch.file("late.png")], 64, "3 s is outside the file, which lasts 2 s"),
            (["frame", path, "--at", "0.5", "-o", existing], 73, "taken.png: already exists"),
            (["frame", path, "--at", "0.5", "-o", scratch.file("no/dir/x.png")], 73, "the directory does not exist"),
            (["frame", path, "--at", "0.5", "-o", scratch.file("x.gif")], 64, "end it in .png, .jpg or .ppm"),
            (["frame", path, "--at", "soon", "-o", scratch.file("x.png")], 64, "soon"),
            (["frame", path, "--at", "1:75", "-o", scratch.file("x.png")], 64, "1:75"),
            (["frame", path, "-o", scratch.file("x.png")], 64, "give --at TIME"),
            (["frame", path, "--at", "1", "--every", "1", "-o", scratch.file("x.png")], 64, "cannot be used together"),
            (["frame", path, "--every", "1", "-o", scratch.file("x.png")], 64, "'thumb-%04d.png'"),
            (["frame", path, "--every", "0", "-o", scratch.file("x-%d.png")], 64, "longer than 0"),
            (["frame", path, "--at", "1", "--size", "0x10", "-o", scratch.file("x.png")], 64, "0x10"),
            (["frame", path, "--at", "1", "--size", "16385x16", "-o", scratch.file("x.png")], 64, "'16385x16' is invalid for '--size"),
            (["frame", path, "--at", "1", "--size", "160xx120", "-o", scratch.file("x.png")], 64, "'160xx120' is invalid for '--size"),
            (["frame", path, "--at", "1x", "-o", scratch.file("x.png")], 64, "'1x' is invalid for '--at <time>': use seconds (2.5)"),
            (["frame", path, "--every", "0s", "-o", scratch.file("x-%d.png")], 64, "longer than 0"),
            (["frame", audioOnly, "--at", "0", "-o", scratch.file("x.png")], 65, "tone.wav: has no video track"),
            (["frame", notMedia, "--at", "0", "-o", scratch.file("x.png")], 65, "not a media file"),
        ]
        for (arguments, status, message) in cases {
            let result = try CapctlRun.run(arguments)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            #expect(result.stderrLines.count == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("capctl: error: "))
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "mine")
        for leftover in ["late.png", "x.png", "x.gif", "x-1.png"] {
            #expect(!FileManager.default.fileExists(atPath: scratch.file(leftover)), "\(leftover) left behind")
        }
    }
}

extension CapctlRun {
    /// ffprobe's plain output for a file.
    static func ffprobe(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffprobe", "-v", "error"] + arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
