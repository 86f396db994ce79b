import Foundation
import Glibc
import Testing

/// Top-level boxes of a file (type, offset, size, header size), read by the test itself.
func topLevelBoxes(_ path: String) throws -> [(type: String, offset: Int, size: Int, header: Int)] {
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    var boxes = [(type: String, offset: Int, size: Int, header: Int)]()
    var offset = 0
    while offset + 8 <= bytes.count {
        var size = (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
        var header = 8
        if size == 1 { size = (0..<8).reduce(0) { $0 << 8 | Int(bytes[offset + 8 + $1]) }; header = 16 }
        if size == 0 { size = bytes.count - offset }
        guard size >= header else { break }
        boxes.append((String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self), offset, size, header))
        offset += size
    }
    return boxes
}

/// ffprobe's JSON for a file read from a pipe (no seeking).
func probeThroughPipe(_ path: String, _ entries: [String]) throws -> [String: Any] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["ffprobe", "-v", "error", "-of", "json"] + entries + ["-i", "pipe:0"]
    process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
}

/// Whether ffmpeg decodes the whole file without an error.
func decodesWithoutErrors(_ path: String) throws -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["ffmpeg", "-v", "error", "-nostdin", "-xerror", "-i", path, "-f", "null", "-"]
    let err = Pipe()
    process.standardError = err
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 && errors.isEmpty
}

/// The RGB pixels of a binary PPM.
func ppmPixels(_ path: String) throws -> [UInt8] {
    let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    var fields = 0, offset = 0, inField = false
    while fields < 4 && offset < data.count {
        let space = data[offset] == 0x0A || data[offset] == 0x20
        if space && inField { fields += 1 }
        inField = !space
        offset += 1
    }
    return Array(data[offset...])
}

func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
    guard a.count == b.count, !a.isEmpty else { return .infinity }
    return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
}

/// `capctl record` to MP4/MOV: fragments while recording, a regular file
/// once it ends cleanly; `capctl repair` for one that was killed.
@Suite(.serialized) struct HybridRecordCommandTests {
    static let devices = ["--video", "test-pattern", "--audio", "test-tone", "--size", "320x240"]

    func finished(_ result: CapctlRun) throws -> [String: Any] {
        let line = try #require(result.stdout.split(separator: "\n").last)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// The durations of a track's edits that play media (empty edits left out).
    func editDurations(_ info: [String: Any], _ type: String) -> [Double] {
        (track(info, type)?["edits"] as? [[String: Any]] ?? []).filter { $0["mediaTime"] is Double }.compactMap { $0["duration"] as? Double }
    }

    @Test func aFinishedRecordingIsARegularFileEveryReaderAgreesOn() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.devices + ["--max-duration", "4", "--progress", "json", "out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let event = try finished(result)
        let path = scratch.file("out.mp4")
        #expect(try topLevelBoxes(path).map(\.type) == ["ftyp", "free", "mdat", "moov"])

        // The index holds the frames the events report, and the audio frames
        // of the samples they report; the audio edits play those samples
        // (to the end of the recording, within the last AAC frame's padding).
        let frames = try #require(event["frames"] as? Int)
        let audioSamples = try #require(event["audioSamples"] as? Int)
        let streams = try JSONSerialization.jsonObject(with: Data(try runTool("ffprobe", [
            "-v", "error", "-of", "json", "-show_entries", "stream=codec_type,nb_frames", path]).stdout.utf8)) as? [String: Any]
        let counts = (streams?["streams"] as? [[String: Any]] ?? []).reduce(into: [String: Int]()) {
            $0[$1["codec_type"] as? String ?? ""] = Int($1["nb_frames"] as? String ?? "")
        }
        #expect(counts["video"] == frames)
        // 4 s at 30 fps: the frames in the file and those a busy machine made
        // the camera drop (counted) add up, and the drops are few.
        let dropped = try #require(event["droppedFrames"] as? Int)
        #expect(abs(frames + dropped - 120) <= 1 && dropped <= 12, "\(frames) frames and \(dropped) dropped in 4 s at 30 fps")
        let info = try mediaInfo(path)
        let audioPlayed = Int((editDurations(info, "audio").reduce(0, +) * 48000).rounded())
        #expect(audioPlayed >= audioSamples && audioPlayed - audioSamples < 1024, "the audio edits play \(audioPlayed) samples; \(audioSamples) were recorded")
        // AAC frames of 1024 samples: what was recorded (the encoder's priming is not written).
        #expect(counts["audio"] == (audioSamples + 1023) / 1024, "\(counts["audio"] ?? 0) AAC frames for \(audioSamples) samples")

        #expect(info["layout"] as? String == "regular")
        #expect(info["finished"] as? Bool == true)
        #expect(info["fragments"] as? Int == 0)
        #expect(info["indexBeforeMedia"] as? Bool == false)
        let duration = try #require(info["duration"] as? Double)
        #expect(abs(duration - 4) < 1e-3)
        // ffprobe from a pipe, without seeking, finds the same duration.
        let piped = try probeThroughPipe(path, ["-show_format"])
        let pipedDuration = Double((piped["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0
        #expect(abs(pipedDuration - duration) < 1e-3, "from a pipe: \(pipedDuration) s")
        #expect(try decodesWithoutErrors(path))

        // Seeking to a frame's time shows the frame `capctl frame` shows.
        let times = try packetTimes(path).sorted()
        for number in [45, 100] {
            let time = String(format: "%.6f", times[number] + 0.0005)
            let shown = scratch.file("shown-\(number).ppm"), sought = scratch.file("sought-\(number).ppm"), next = scratch.file("next-\(number).ppm")
            #expect(try CapctlRun.run(["frame", path, "--at", time, "-o", shown]).status == 0)
            #expect(try runTool("ffmpeg", ["-v", "error", "-nostdin", "-ss", String(format: "%.6f", times[number]), "-i", path,
                                           "-frames:v", "1", sought]).status == 0)
            #expect(try runTool("ffmpeg", ["-v", "error", "-nostdin", "-ss", String(format: "%.6f", times[number + 1]), "-i", path,
                                           "-frames:v", "1", next]).status == 0)
            let mine = try ppmPixels(shown)
            let same = meanDifference(mine, try ppmPixels(sought)), other = meanDifference(mine, try ppmPixels(next))
            #expect(same < 3 && same < other / 2, "frame \(number) at \(time) s: \(same) from ffmpeg's, \(other) from the next")
        }
    }

    @Test func fragmentsOnlyKeepsTheFileFragmented() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.devices + ["--max-duration", "2", "--fragments-only", "--fragment-interval", "0.5",
                                                                    "--progress", "json", "out.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let path = scratch.file("out.mp4")
        let types = try topLevelBoxes(path).map(\.type)
        #expect(Array(types.prefix(2)) == ["ftyp", "moov"] && types.last == "mfra")
        #expect(types.filter { $0 == "moof" }.count >= 3)
        let info = try mediaInfo(path)
        #expect(info["layout"] as? String == "fragmented")
        #expect(info["finished"] as? Bool == true)
        #expect(try decodedFrames(path) == (try finished(result))["frames"] as? Int)
        let text = try CapctlRun.run(["info", path])
        #expect(text.stdout.contains("fragmented") && !text.stdout.contains("unfinished"))

        let contradiction = try CapctlRun.run(["record"] + Self.devices + ["--fragments-only", "--no-fragments", "x.mp4"], in: scratch.url)
        #expect(contradiction.status == 64)
        #expect(contradiction.stderr.contains("--fragments-only"))
    }

    /// SIGKILL at random moments: the file reads up to its last fragment,
    /// `info` says it did not finish, `repair` makes it regular and it decodes cleanly.
    @Test func killedAtRandomTimesThenRepaired() throws {
        var generator = SystemRandomNumberGenerator()
        for trial in 0..<3 {
            let scratch = try RecordScratch()
            let recorder = try RunningRecorder(Self.devices + ["--fragment-interval", "0.5", "out.mp4"], in: scratch.url)
            try recorder.waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= 0.6 }
            let delay = Double.random(in: 0.1...2.0, using: &generator)
            usleep(UInt32(delay * 1_000_000))
            recorder.signal(SIGKILL)
            _ = recorder.finish()
            let path = scratch.file("out.mp4")
            let before = try mediaInfo(path)
            #expect(before["layout"] as? String == "fragmented", "trial \(trial), killed after \(delay) s more")
            #expect(before["finished"] as? Bool == false)
            let framesBefore = try decodedFrames(path)
            #expect(framesBefore >= 15, "trial \(trial): \(framesBefore) frames readable")
            #expect(try CapctlRun.run(["info", path]).stdout.contains("capctl repair"))

            let repair = try CapctlRun.run(["repair", "--json", path])
            #expect(repair.status == 0, "trial \(trial): \(repair.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(repair.stdout.utf8)) as? [String: Any])
            #expect(report["outcome"] as? String == "repaired")
            #expect(report["sessions"] as? Int == 1)
            let videoSamples = ((report["tracks"] as? [[String: Any]])?.first { $0["type"] as? String == "video" })?["samples"] as? Int
            let after = try mediaInfo(path)
            #expect(after["layout"] as? String == "regular")
            #expect(after["finished"] as? Bool == true)
            #expect(try topLevelBoxes(path).map(\.type) == ["ftyp", "free", "mdat", "moov"])
            #expect(try decodesWithoutErrors(path), "trial \(trial)")
            let framesAfter = try decodedFrames(path)
            #expect(framesAfter >= framesBefore && framesAfter == videoSamples, "trial \(trial): \(framesAfter) frames, \(framesBefore) before")
            let duration = try #require(after["duration"] as? Double)
            let piped = try probeThroughPipe(path, ["-show_format"])
            #expect(abs((Double((piped["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0) - duration) < 1e-3)
            let again = try CapctlRun.run(["repair", path])
            #expect(again.status == 0 && again.stdout.contains("already a regular file"))
        }
    }

    /// A recording paused, then killed: repair leaves the pause out, as a clean finish would.
    @Test func aPausedRecordingKilledIsRepairedWithoutThePause() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.devices + ["--fragment-interval", "0.5", "out.mp4"], in: scratch.url)
        try recorder.waitForMedia(1)
        let resumedAt = try recorder.pauseAndResume(for: 1.5)
        try recorder.waitForMedia(resumedAt + 1.2)
        recorder.signal(SIGKILL)
        _ = recorder.finish()
        let path = scratch.file("out.mp4")
        // Read as fragments, the pause is already out of the media: no gap.
        let gapBefore = zip(try packetTimes(path).sorted().dropFirst(), try packetTimes(path).sorted()).map { $0 - $1 }.max() ?? 0
        #expect(gapBefore < 0.2, "largest gap between packets: \(gapBefore) s")

        let repair = try CapctlRun.run(["repair", path])
        #expect(repair.status == 0, "\(repair.stderr)")
        #expect(repair.stdout.contains("2 recording sessions"))
        let info = try mediaInfo(path)
        #expect(editDurations(info, "video").count == 1, "one edit: the pause is not in the media")
        // As shown: a packet decoded only to reach the second edit's first
        // frame (readers may flag one discard) is no frame of the file's.
        let times = try shownFrameTimes(path)
        let gap = zip(times.dropFirst(), times).map { $0 - $1 }.max() ?? 0
        #expect(gap < 0.2, "largest gap between frames: \(gap) s")
        let duration = try #require(info["duration"] as? Double)
        #expect(abs(duration - Double(times.count) / 30) < 0.1, "\(duration) s for \(times.count) frames")
        #expect(try decodesWithoutErrors(path))
    }

    @Test func repairRefusesWithTheDocumentedStatus() throws {
        let scratch = try RecordScratch()
        func refused(_ arguments: [String], _ status: Int32, _ words: String) throws {
            let result = try CapctlRun.run(["repair"] + arguments, in: scratch.url)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderrLines.count == 1 && result.stderr.contains(words), "\(arguments): \(result.stderr)")
        }
        try refused(["missing.mp4"], 66, "missing.mp4: no such file")
        try "text".write(toFile: scratch.file("notes.mp4"), atomically: false, encoding: .utf8)
        try refused(["notes.mp4"], 65, "not an MP4 or QuickTime file")
        try FileManager.default.createDirectory(atPath: scratch.file("folder.mp4"), withIntermediateDirectories: false)
        try refused(["folder.mp4"], 65, "not a regular file")

        // A classic file killed before its index: nothing to rebuild from.
        let classic = try RunningRecorder(Self.devices + ["--no-fragments", "classic.mp4"], in: scratch.url)
        try classic.waitFor { $0["event"] as? String == "progress" && ($0["duration"] as? Double ?? 0) >= 0.5 }
        // A recording still writes its file: refused, untouched.
        let live = try CapctlRun.run(["repair", "classic.mp4"], in: scratch.url)
        #expect(live.status == 69 && live.stderr.contains("still writing"), "\(live.stderr)")
        classic.signal(SIGKILL)
        _ = classic.finish()
        try refused(["classic.mp4"], 65, "cut off before its index")

        let recorded = try CapctlRun.run(["record"] + Self.devices + ["--max-duration", "1", "--progress", "json", "done.mp4"], in: scratch.url)
        #expect(recorded.status == 0)
        let regular = try CapctlRun.run(["repair", "done.mp4"], in: scratch.url)
        #expect(regular.status == 0 && regular.stdout.contains("already a regular file"))
        let usage = try CapctlRun.run(["repair"], in: scratch.url)
        #expect(usage.status == 64)
    }
}
