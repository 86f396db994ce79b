import Foundation
import Glibc
import Testing

/// A `capctl record` running in the background, its NDJSON events collected as they come.
final class RunningRecorder: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var buffer = Data()
    private var errors = Data()
    /// Pipes (stdout, stderr) not yet read to their end.
    private var openPipes = 2

    init(_ arguments: [String], in directory: URL) throws {
        process.executableURL = CapctlRun.binary
        process.arguments = ["record", "--progress", "json", "--progress-interval", "0.1"] + arguments
        process.currentDirectoryURL = directory
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self else { return }
            self.take(chunk, from: handle) { $0.buffer.append($1) }
        }
        err.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self else { return }
            self.take(chunk, from: handle) { $0.errors.append($1) }
        }
        try process.run()
    }

    /// Keeps a chunk read from a pipe; an empty one is the pipe's end.
    private func take(_ chunk: Data, from handle: FileHandle, into keep: (RunningRecorder, Data) -> Void) {
        lock.lock(); defer { lock.unlock() }
        if chunk.isEmpty {
            handle.readabilityHandler = nil
            openPipes -= 1
        } else {
            keep(self, chunk)
        }
    }

    /// Every complete event so far.
    var events: [[String: Any]] {
        lock.lock()
        let text = String(decoding: buffer, as: UTF8.self)
        lock.unlock()
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    var stderr: String {
        lock.lock(); defer { lock.unlock() }
        return String(decoding: errors, as: UTF8.self)
    }

    /// Waits (at most `seconds`) for an event that satisfies `condition`.
    @discardableResult
    func waitFor(_ seconds: Double = 30, _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let event = events.first(where: condition) { return event }
            if !process.isRunning, let event = events.first(where: condition) { return event }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw RecorderTimeout(events: events.map { $0["event"] as? String ?? "?" }, stderr: stderr)
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    deinit {
        // A test that failed half way leaves no recording running.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Waits for the process to end, and for everything it wrote to be
    /// read (a loaded machine delivers the last lines well after the exit),
    /// and returns its status.
    func finish() -> Int32 {
        process.waitUntilExit()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            lock.lock(); let open = openPipes; lock.unlock()
            if open <= 0 { break }
            usleep(10_000)
        }
        return process.terminationStatus
    }

    struct RecorderTimeout: Error, CustomStringConvertible {
        let events: [String]
        let stderr: String
        var description: String { "timed out; events so far: \(events); stderr: \(stderr)" }
    }
}

extension RunningRecorder {
    /// How many events named `name` have come so far.
    func count(_ name: String) -> Int { events.filter { $0["event"] as? String == name }.count }

    /// Waits until progress reports at least `seconds` of media.
    func waitForMedia(_ seconds: Double) throws {
        try waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= seconds }
    }

    /// Resumes (SIGUSR2) and answers the media time its `resumed` event gives.
    func resume() throws -> Double {
        let before = count("resumed")
        signal(SIGUSR2)
        try waitFor { _ in count("resumed") > before }
        let resumed = events.filter { $0["event"] as? String == "resumed" }[before]
        return try #require(resumed["duration"] as? Double)
    }

    /// Pauses (SIGUSR1), lets `seconds` of capture go by, and resumes;
    /// answers the media time of the resume.
    func pauseAndResume(for seconds: Double) throws -> Double {
        let before = count("paused")
        signal(SIGUSR1)
        try waitFor { _ in count("paused") > before }
        usleep(UInt32(seconds * 1_000_000))
        return try resume()
    }
}

/// Runs a tool such as ffprobe and answers its stdout (and status).
func runTool(_ name: String, _ arguments: [String]) throws -> (status: Int32, stdout: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [name] + arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// The presentation times of a stream's packets, in seconds, in file order.
func packetTimes(_ path: String, stream: String = "v:0") throws -> [Double] {
    let result = try runTool("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time",
                                         "-of", "csv=p=0", path])
    return result.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
}

/// The times at which a stream's decoded frames are shown, in seconds, in
/// order: edit lists applied, and packets a reader decodes only to reach
/// an edit's first frame (flagged discard) left out.
func shownFrameTimes(_ path: String, stream: String = "v:0") throws -> [Double] {
    let result = try runTool("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries", "frame=best_effort_timestamp_time",
                                         "-of", "default=noprint_wrappers=1:nokey=1", path])
    return result.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
}

/// Makes a clip of ffmpeg's testsrc2 pattern (320x240 at 30 fps); `arguments` give its length, codec and file.
func testPatternClip(_ arguments: [String]) throws -> (status: Int32, stdout: String) {
    try runTool("ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30"] + arguments)
}

/// Frames ffmpeg decodes from a stream (0 when it cannot read the file).
func decodedFrames(_ path: String, stream: String = "v:0") throws -> Int {
    let result = try runTool("ffprobe", ["-v", "error", "-count_frames", "-select_streams", stream, "-show_entries",
                                         "stream=nb_read_frames", "-of", "csv=p=0", path])
    return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
}

/// `capctl info --json` of a file.
func mediaInfo(_ path: String) throws -> [String: Any] {
    let result = try CapctlRun.run(["info", "--json", path])
    guard result.status == 0 else { throw CapctlInfoFailed(message: result.stderr) }
    return (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
}

struct CapctlInfoFailed: Error { let message: String }

func track(_ info: [String: Any], _ type: String) -> [String: Any]? {
    (info["tracks"] as? [[String: Any]])?.first { $0["type"] as? String == type }
}

/// `capctl record` on the virtual devices: limits, segments, signals and
/// audio-only containers, checked on the files with `capctl info` and ffprobe.
@Suite(.serialized) struct RecordCommandTests {
    static let small = ["--video", "test-pattern", "--size", "320x240"]

    func finished(_ result: CapctlRun) throws -> [String: Any] {
        let line = try #require(result.stdout.split(separator: "\n").last)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(event["event"] as? String == "finished")
        return event
    }

    @Test func maxDurationStopsWithinOneFrame() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.small + ["--no-realtime", "--max-duration", "2.5", "--progress", "json", "out.mp4"],
                                       in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty)
        let event = try finished(result)
        #expect(event["reason"] as? String == "max-duration")
        #expect(event["frames"] as? Int == 75)
        #expect(event["exitStatus"] as? Int == 0)
        let info = try mediaInfo(scratch.file("out.mp4"))
        let video = try #require(track(info, "video"))
        let duration = try #require(video["duration"] as? Double)
        #expect(abs(duration - 2.5) <= 1.0 / 30 + 1e-6, "video track lasts \(duration) s")
        #expect(video["frames"] as? Int == 75)
        #expect(try decodedFrames(scratch.file("out.mp4")) == 75)
    }

    @Test func maxSizeIsNotExceeded() throws {
        let scratch = try RecordScratch()
        let limit = 300_000
        let result = try CapctlRun.run(["record"] + Self.small + ["--no-realtime", "--max-size", "300K", "--max-duration", "5m",
                                                                  "--progress", "json", "out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["reason"] as? String == "max-size")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: scratch.file("out.mp4"))[.size] as? Int)
        #expect(size <= limit, "\(size) bytes")
        #expect(size >= limit / 2, "stopped far too early: \(size) bytes")
        #expect(event["bytes"] as? Int == size)
        let frames = try #require(event["frames"] as? Int)
        #expect(try decodedFrames(scratch.file("out.mp4")) == frames)
    }

    @Test func segmentsAddUpWithNoFrameTwice() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.small + ["--no-realtime", "--max-duration", "3.5", "--segment-duration", "1",
                                                                  "--progress", "json", "seg-%n.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        let files = try #require(event["files"] as? [String])
        #expect(files == ["seg-1.mp4", "seg-2.mp4", "seg-3.mp4", "seg-4.mp4"])
        #expect(scratch.contents == files)
        let segments = result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0["event"] as? String == "segment" }
        #expect(segments.count == 4)
        var total = 0
        for (file, segment) in zip(files, segments) {
            let frames = try decodedFrames(scratch.file(file))
            #expect(segment["frames"] as? Int == frames, "\(file)")
            #expect(segment["complete"] as? Bool == true)
            let times = try packetTimes(scratch.file(file))
            #expect(Set(times).count == times.count, "\(file) repeats a timestamp")
            total += frames
        }
        #expect(total == event["frames"] as? Int)
        #expect(total == 105)
    }

    @Test func sigintFinalizesThePlayableFile() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.small + ["--no-fragments", "out.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["frames"] as? Int ?? 0) > 5 }
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let event = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        #expect(event["reason"] as? String == "stopped")
        // A classic (unfragmented) MP4 plays only once its index is written.
        let frames = try decodedFrames(scratch.file("out.mp4"))
        #expect(frames > 5)
        #expect(frames == event["frames"] as? Int)
        #expect(try runTool("ffmpeg", ["-v", "error", "-xerror", "-i", scratch.file("out.mp4"), "-f", "null", "-"]).status == 0)
    }

    /// SIGHUP ends the file at once and goes on in the next one (OUT-2 when
    /// OUT has no %n): no frame lost or repeated at the switch, and the new
    /// file starts with a keyframe and plays on its own.
    @Test func sighupSwitchesToTheNextFile() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.small + ["--max-duration", "2.5", "clip.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= 1 }
        recorder.signal(SIGHUP)
        let segment = try recorder.waitFor { $0["event"] as? String == "segment" }
        #expect(segment["file"] as? String == "clip.mp4")
        #expect(segment["complete"] as? Bool == true)
        let switchedAt = try #require(segment["duration"] as? Double)
        #expect(switchedAt >= 1 && switchedAt < 2.5, "switched at \(switchedAt) s")
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let event = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        #expect(event["reason"] as? String == "max-duration")
        #expect(event["files"] as? [String] == ["clip.mp4", "clip-2.mp4"])
        let first = try decodedFrames(scratch.file("clip.mp4"))
        let second = try decodedFrames(scratch.file("clip-2.mp4"))
        #expect(first == segment["frames"] as? Int)
        #expect(first + second == event["frames"] as? Int)
        #expect(abs(first + second - 75) <= 1, "\(first) + \(second) frames in 2.5 s at 30 fps")
        let keys = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=key_frame", "-of", "default=nw=1:nk=1",
                                           "-read_intervals", "%+#1", scratch.file("clip-2.mp4")])
        #expect(keys.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "clip-2.mp4 does not start with a keyframe")
        #expect(try runTool("ffmpeg", ["-v", "error", "-xerror", "-i", scratch.file("clip-2.mp4"), "-f", "null", "-"]).status == 0)
    }

    /// A second SIGINT while the first one's stop is still finishing (here,
    /// an encoder far behind a 1080p camera) exits at once with status 130,
    /// leaving the fragments written so far readable.
    @Test func aSecondSigintExitsAtOnce() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(["--video", "test-pattern", "--size", "1920x1080", "--video-codec", "hevc", "--preset", "veryslow",
                                            "--fragment-interval", "0.5", "out.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= 1 }
        recorder.signal(SIGINT)
        usleep(300_000)
        #expect(recorder.process.isRunning, "the first SIGINT's stop should still be encoding what was queued")
        let second = Date()
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 130, "stderr: \(recorder.stderr)")
        // What shows it did not wait for the encoder: "interrupted", not
        // "finished", comes last. The time is only a bound a starved machine
        // meets (beside a full test run, 10 s were seen); the queued encode
        // alone takes longer than that.
        #expect(Date().timeIntervalSince(second) < 20)
        #expect(recorder.events.last?["event"] as? String == "interrupted")
        #expect(!recorder.events.contains { $0["event"] as? String == "finished" })
        // The file is left where it was, and whatever fragments it has are readable.
        #expect(scratch.contents == ["out.mp4"])
        #expect(try runTool("ffprobe", ["-v", "error", scratch.file("out.mp4")]).status == 0)
    }

    @Test func sigkillLeavesAFileReadableToItsLastFragment() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.small + ["--fragment-interval", "0.5", "out.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= 2 }
        recorder.signal(SIGKILL)
        _ = recorder.finish()
        #expect(recorder.process.terminationReason == .uncaughtSignal)
        // At least the fragments before the last half second are there and decode.
        let frames = try decodedFrames(scratch.file("out.mp4"))
        #expect(frames >= 30, "\(frames) frames decoded")
        let info = try mediaInfo(scratch.file("out.mp4"))
        #expect((info["fragments"] as? Int ?? 0) >= 2)
        #expect(try runTool("ffmpeg", ["-v", "error", "-i", scratch.file("out.mp4"), "-f", "null", "-"]).status == 0)
    }

    /// A file played as fast as possible is recorded to its last frame: the
    /// source waits for the writer instead of filling (and overflowing) its
    /// queue, and the end of the input lets the queued frames be written.
    @Test func aFileInputIsRecordedToItsLastFrame() throws {
        let scratch = try RecordScratch()
        let made = try testPatternClip(["-t", "10", "-pix_fmt", "yuv422p", "-f", "yuv4mpegpipe", scratch.file("in.y4m")])
        try #require(made.status == 0)
        let result = try CapctlRun.run(["record", "--video", "file:in.y4m", "--no-realtime", "--preset", "ultrafast",
                                        "--progress", "json", "out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["reason"] as? String == "end-of-input")
        #expect(event["frames"] as? Int == 300)
        #expect(event["dropped"] as? Int == 0)
        #expect(try decodedFrames(scratch.file("out.mp4")) == 300)
        let info = try mediaInfo(scratch.file("out.mp4"))
        #expect(abs((track(info, "video")?["duration"] as? Double ?? 0) - 10) < 1e-3)
    }

    /// MJPEG played as fast as possible and copied: every frame arrives, byte
    /// for byte, though the writing thread now wakes for runs of frames; 301
    /// frames, so that the last run is a short one the end of input hands over.
    @Test(arguments: [[], ["--no-fragments"]])
    func aCopiedMJPEGFileKeepsEveryFrameUnchanged(extra: [String]) throws {
        let scratch = try RecordScratch()
        let made = try testPatternClip(["-frames:v", "301", "-c:v", "mjpeg", "-f", "mjpeg", scratch.file("in.mjpeg")])
        try #require(made.status == 0)
        let result = try CapctlRun.run(["record", "--video", "file:in.mjpeg", "--no-realtime", "--video-codec", "copy",
                                        "--progress", "json"] + extra + ["out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["reason"] as? String == "end-of-input")
        #expect(event["frames"] as? Int == 301)
        #expect(event["dropped"] as? Int == 0)
        let hashes = { (file: String) throws -> [Substring] in
            try runTool("ffprobe", ["-v", "error", "-show_data_hash", "md5", "-show_entries", "packet=data_hash", "-of", "csv=p=0", file])
                .stdout.split(separator: "\n")
        }
        let copied = try hashes(scratch.file("out.mp4"))
        #expect(copied.count == 301)
        #expect(copied == (try hashes(scratch.file("in.mjpeg"))))
    }

    /// H.264 with B-frames, replayed from MP4 (length-prefixed, parameter sets
    /// in the track header) and copied into MP4 and Matroska: every frame, in
    /// its order, decoding to the same pictures as the source.
    @Test(arguments: ["mp4", "mkv"])
    func aCopiedH264FileWithBFramesDecodesToTheSamePictures(container: String) throws {
        let scratch = try RecordScratch()
        let made = try testPatternClip(["-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "30", scratch.file("in.mp4")])
        try #require(made.status == 0)
        let out = "out.\(container)"
        let result = try CapctlRun.run(["record", "--video", "file:in.mp4", "--no-realtime", "--video-codec", "copy",
                                        "--progress", "json", out], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["frames"] as? Int == 60)
        #expect(event["dropped"] as? Int == 0)
        #expect(try runTool("ffmpeg", ["-v", "error", "-xerror", "-i", scratch.file(out), "-f", "null", "-"]).status == 0)
        let pictures = { (file: String) throws -> [Substring] in
            try runTool("ffmpeg", ["-v", "error", "-i", file, "-f", "framemd5", "-"]).stdout.split(separator: "\n")
                .filter { !$0.hasPrefix("#") }.map { $0.split(separator: ",").last ?? "" }
        }
        let copied = try pictures(scratch.file(out))
        #expect(copied.count == 60)
        #expect(copied == (try pictures(scratch.file("in.mp4"))))
    }

    /// Compressed frames recorded with an encoder are decoded first: MJPEG
    /// (as most USB cameras deliver it) to the default H.264, and H.264 with
    /// B-frames from an MP4 file (decoder delay, configuration out of band) to HEVC.
    @Test(arguments: [("mjpeg", [String](), "h264"), ("mp4", ["--video-codec", "hevc", "--preset", "ultrafast"], "hevc")])
    func compressedFramesAreDecodedForAnEncoder(input: String, extra: [String], codec: String) throws {
        let scratch = try RecordScratch()
        let source = input == "mjpeg" ? ["-c:v", "mjpeg", "-f", "mjpeg"] : ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2"]
        let made = try testPatternClip(["-frames:v", "45"] + source + [scratch.file("in.\(input)")])
        try #require(made.status == 0)
        let result = try CapctlRun.run(["record", "--video", "file:in.\(input)", "--no-realtime", "--progress", "json"] + extra + ["out.mp4"],
                                       in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["frames"] as? Int == 45)
        #expect(try decodedFrames(scratch.file("out.mp4")) == 45)
        let info = try mediaInfo(scratch.file("out.mp4"))
        #expect(track(info, "video")?["codec"] as? String == codec)
        #expect(try runTool("ffmpeg", ["-v", "error", "-xerror", "-i", scratch.file("out.mp4"), "-f", "null", "-"]).status == 0)
    }

    /// Codec names are taken in any letter case, and a preset the encoder
    /// states reaches it: a speed level for VP9 (libvpx's cpu-used), a name
    /// for H.264 (x264 writes the settings it used into the stream: veryfast
    /// searches with subme=2, the default medium with subme=7).
    @Test(arguments: [(["--video-codec", "VP9", "--preset", "5", "--audio-codec", "Opus"], "out.webm", "vp9", "opus", nil),
                      (["--video-codec", "H264", "--preset", "veryfast", "--audio-codec", "PCM"], "out.mkv", "h264", "pcm_s16le", "subme=2 "),
                      (["--audio-codec", "FLAC"], "out.mkv", "h264", "flac", "subme=7 ")])
    func codecsInAnyCaseAndTheEncodersPresets(options: [String], out: String, video: String, audio: String, x264Setting: String?) throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.small + ["--audio", "test-tone", "--max-duration", "0.5", "--progress", "json"]
                                       + options + [out], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let info = try mediaInfo(scratch.file(out))
        #expect(track(info, "video")?["codec"] as? String == video)
        #expect(track(info, "audio")?["codec"] as? String == audio)
        if let x264Setting {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: scratch.file(out)))
            #expect(bytes.range(of: Data(x264Setting.utf8)) != nil, "x264's settings lack \(x264Setting)")
        }
    }

    /// A damaged JPEG among good ones (as a USB camera's glitch leaves it)
    /// is lost on its own; the recording goes on and ends well.
    @Test func aDamagedMJPEGFrameIsLostNotTheRecording() throws {
        let scratch = try RecordScratch()
        let made = try testPatternClip(["-frames:v", "10", "-c:v", "mjpeg", "-f", "mjpeg", scratch.file("good.mjpeg")])
        try #require(made.status == 0)
        let good = try Data(contentsOf: URL(fileURLWithPath: scratch.file("good.mjpeg")))
        // An image whose frame header states a 0x0 size: the decoder refuses it.
        let damaged = Data([0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x00, 0x00, 0x00, 0x03, 0x01, 0x22, 0x00, 0x02,
                            0x11, 0x01, 0x03, 0x11, 0x01, 0xFF, 0xD9])
        try (good + damaged + good).write(to: URL(fileURLWithPath: scratch.file("in.mjpeg")))
        let result = try CapctlRun.run(["record", "--video", "file:in.mjpeg", "--no-realtime", "--progress", "json", "out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["reason"] as? String == "end-of-input")
        #expect(try decodedFrames(scratch.file("out.mp4")) == 20)
        // The lost frame is reported as dropped, not as written.
        #expect(event["frames"] as? Int == 20)
        #expect(event["droppedByWriter"] as? Int == 1)
        #expect(event["dropped"] as? Int == 1)
    }

    @Test(arguments: [("wav", "pcm_s16le"), ("flac", "flac"), ("m4a", "aac"), ("ogg", "opus")])
    func audioOnlyFiles(ext: String, codec: String) throws {
        let scratch = try RecordScratch()
        let name = "tone.\(ext)"
        let result = try CapctlRun.run(["record", "--audio", "test-tone:1000", "--no-realtime", "--max-duration", "1.5",
                                        "--progress", "json", name], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        #expect(event["audioSamples"] as? Int == 72000)
        #expect(event["frames"] as? Int == 0)
        let info = try mediaInfo(scratch.file(name))
        let audio = try #require(track(info, "audio"))
        #expect(audio["codec"] as? String == codec)
        #expect(audio["sampleRate"] as? Int == 48000)
        #expect(track(info, "video") == nil)
        let duration = try #require(audio["duration"] as? Double)
        // Lossy codecs add their priming and padding; never more than a frame of 2048 samples.
        #expect(duration >= 1.5 - 1e-6 && duration <= 1.5 + 2048.0 / 48000, "\(duration) s")
    }
}
