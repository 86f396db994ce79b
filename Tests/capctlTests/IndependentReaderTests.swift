import Foundation
import Glibc
import Testing

/// What readers that share none of capctl's code see in its recordings:
/// GStreamer reading a file as a player does (pull mode) and as from a
/// network (push mode), MediaInfo, mkvtoolnix, MediaConch (Matroska and
/// WebM) and ffmpeg (Tests/Readers/read_media.py). In every container, for
/// plain, paused, segmented, several-camera, repaired, fragment-only,
/// fast-start and pre-roll recordings, each reader's frame count and
/// duration are within one frame of what capctl reported, its audio within
/// one codec frame, both tracks start at 0, and no reader warns.
@Suite(.serialized) struct IndependentReaderTests {
    static let devices = ["--video", "test-pattern", "--audio", "test-tone", "--size", "320x240"]
    static let frame = 1.0 / 30
    /// An AAC frame: what a container without a way to trim the last one
    /// leaves for readers to decode beyond the recorded samples.
    static let codecFrame = 1024

    /// What capctl reported of one file.
    struct Reported {
        var file: String
        var frames: Int?
        var audioSamples: Int?
        var duration: Double
    }

    /// Every reader's view of `path` (read_media.py's JSON).
    static func read(_ path: String) throws -> [String: [String: Any]] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Readers/read_media.py").path
        let result = try runTool("python3", [script, path])
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try #require(object as? [String: [String: Any]], "read_media.py printed \(result.stdout)")
    }

    /// Checks every reader against what capctl reported of the file.
    static func check(_ reported: Reported, in scratch: RecordScratch, _ what: String, videoMayStartLate: Double = 0,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let readers = try read(scratch.file(reported.file))
        #expect(readers.count >= 3, "\(what): readers \(readers.keys.sorted())", sourceLocation: sourceLocation)
        for (name, reading) in readers.sorted(by: { $0.key < $1.key }) {
            let label = "\(what), \(reported.file), \(name)"
            #expect(reading["error"] is NSNull, "\(label): \(reading["error"] ?? "")", sourceLocation: sourceLocation)
            #expect((reading["warnings"] as? [String])?.isEmpty == true, "\(label) warns: \(reading["warnings"] ?? "")",
                    sourceLocation: sourceLocation)
            // MediaConch checks conformance; it counts nothing.
            if name == "mediaconch" { continue }
            if let frames = reported.frames {
                let video = reading["video"] as? [String: Any]
                let count = video?["frames"] as? Int
                // MediaInfo counts no Matroska or MPEG-TS frames (it would state duration × rate).
                let counts = !(name == "mediainfo" && video?["frames"] is NSNull)
                #expect(!counts || count.map { abs($0 - frames) <= 1 } == true, "\(label): \(count.map(String.init) ?? "no") frames, \(frames) reported",
                        sourceLocation: sourceLocation)
                if let duration = video?["duration"] as? Double {
                    #expect(abs(duration - reported.duration) <= frame + 1e-3, "\(label): video lasts \(duration) s, \(reported.duration) reported",
                            sourceLocation: sourceLocation)
                }
                if let start = video?["start"] as? Double {
                    // Beside Opus, libavformat's Matroska muxer starts the video
                    // at the audio's pre-skip (6.5 ms, which the container's
                    // 1 ms ticks may round to 7; see README, "Containers").
                    // A camera whose first frame came after the other's starts that much later in its own file.
                    let allowed = max(reported.file.hasSuffix(".webm") ? 0.0075 : 1e-3, videoMayStartLate)
                    #expect(abs(start) < allowed, "\(label): video starts at \(start) s", sourceLocation: sourceLocation)
                }
            }
            if let samples = reported.audioSamples {
                let audio = reading["audio"] as? [String: Any]
                #expect(audio != nil, "\(label): no audio", sourceLocation: sourceLocation)
                if let count = audio?["samples"] as? Int {
                    #expect(abs(count - samples) < codecFrame, "\(label): \(count) audio samples, \(samples) reported",
                            sourceLocation: sourceLocation)
                }
                if let start = audio?["start"] as? Double {
                    // Opus's pre-skip (6.5 ms) starts before 0 and is not played.
                    #expect(start > -0.007 && start < Double(codecFrame) / 48000, "\(label): audio starts at \(start) s",
                            sourceLocation: sourceLocation)
                }
            }
            if let duration = reading["duration"] as? Double {
                // (A whole AAC frame, which may outlast the video, is shorter than a frame.)
                #expect(abs(duration - reported.duration) <= frame + 2e-3, "\(label): lasts \(duration) s, \(reported.duration) reported",
                        sourceLocation: sourceLocation)
            }
        }
    }

    /// Records until about `seconds` of media are in, pausing `pauses` times
    /// on the way (each pause 0.6 s of capture), then stops with SIGINT.
    static func record(_ arguments: [String], pauses: Int, seconds: Double = 2.4, in scratch: RecordScratch) throws -> RunningRecorder {
        let recorder = try RunningRecorder(arguments, in: scratch.url)
        let stretch = seconds / Double(pauses + 1)
        var mark = stretch
        for _ in 0..<pauses {
            try recorder.waitForMedia(mark)
            _ = try recorder.pauseAndResume(for: 0.6)
            mark += stretch
        }
        try recorder.waitForMedia(mark)
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "\(recorder.stderr)")
        return recorder
    }

    static func finished(_ recorder: RunningRecorder) throws -> [String: Any] {
        try #require(recorder.events.last { $0["event"] as? String == "finished" })
    }

    static func reported(_ event: [String: Any], file: String, video: Bool = true, audio: Bool = true) throws -> Reported {
        Reported(file: file, frames: video ? try #require(event["frames"] as? Int) : nil,
                 audioSamples: audio ? try #require(event["audioSamples"] as? Int) : nil,
                 duration: try #require(event["duration"] as? Double))
    }

    /// Two pauses take every path one does (a session ended, one begun after
    /// it) and the way back into a paused file twice; one alone is not recorded
    /// again here (the layouts, the segments and the cameras below pause once).
    @Test(arguments: ["mp4", "mov", "mkv", "webm", "ts"], [0, 2])
    func everyReaderSeesWhatWasRecorded(container: String, pauses: Int) throws {
        let scratch = try RecordScratch()
        let name = "out.\(container)"
        let recorder = try Self.record(Self.devices + [name], pauses: pauses, in: scratch)
        try Self.check(Self.reported(try Self.finished(recorder), file: name), in: scratch, "\(pauses) pauses")
    }

    @Test func audioAloneInM4A() throws {
        let scratch = try RecordScratch()
        let recorder = try Self.record(["--audio", "test-tone", "out.m4a"], pauses: 1, in: scratch)
        try Self.check(Self.reported(try Self.finished(recorder), file: "out.m4a", video: false), in: scratch, "m4a, paused")
    }

    @Test(arguments: [["--fragments-only"], ["--faststart"], ["--no-fragments"]])
    func mp4Layouts(options: [String]) throws {
        let scratch = try RecordScratch()
        let recorder = try Self.record(Self.devices + options + ["out.mp4"], pauses: 1, in: scratch)
        try Self.check(Self.reported(try Self.finished(recorder), file: "out.mp4"), in: scratch, options.joined(separator: " "))
    }

    /// Segments, one of them paused: each file as its `segment` event says.
    @Test(arguments: ["mp4", "mkv"])
    func segments(container: String) throws {
        let scratch = try RecordScratch()
        let recorder = try Self.record(Self.devices + ["--segment-duration", "1", "seg-%n.\(container)"], pauses: 1, seconds: 2.6, in: scratch)
        let segments = recorder.events.filter { $0["event"] as? String == "segment" }
        #expect(segments.count >= 2)
        for segment in segments {
            let file = try #require(segment["file"] as? String)
            try Self.check(Self.reported(segment, file: file), in: scratch, "segment")
        }
    }

    /// Two cameras, a file each, paused together.
    @Test func severalCameras() throws {
        let scratch = try RecordScratch()
        let cameras = ["--video", "test-pattern,size=320x240,fps=30", "--video", "test-pattern,size=160x120,fps=30", "--audio", "test-tone"]
        let recorder = try Self.record(cameras + ["--segment-duration", "60", "cam%c-%n.mp4"], pauses: 1, in: scratch)
        let segments = recorder.events.filter { $0["event"] as? String == "segment" }
        #expect(segments.count == 2, "\(recorder.events)")
        for segment in segments {
            let file = try #require(segment["file"] as? String)
            try Self.check(Self.reported(segment, file: file), in: scratch, "camera", videoMayStartLate: Self.frame)
        }
    }

    /// Paused, then killed: the repaired file reads as `repair --json` says.
    @Test func aKilledPausedRecordingAfterRepair() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.devices + ["--fragment-interval", "0.5", "out.mp4"], in: scratch.url)
        try recorder.waitForMedia(1)
        let at = try recorder.pauseAndResume(for: 0.6)
        try recorder.waitForMedia(at + 1.2)
        recorder.signal(SIGKILL)
        _ = recorder.finish()
        let repair = try CapctlRun.run(["repair", "--json", scratch.file("out.mp4")])
        #expect(repair.status == 0, "\(repair.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(repair.stdout.utf8)) as? [String: Any])
        let tracks = try #require(report["tracks"] as? [[String: Any]])
        let video = try #require(tracks.first { $0["type"] as? String == "video" })
        try Self.check(Reported(file: "out.mp4", frames: video["samples"] as? Int, audioSamples: nil,
                                duration: try #require(report["duration"] as? Double)), in: scratch, "repaired")
    }

    /// Begun paused with a pre-roll: the resume writes the pre-roll first.
    @Test(arguments: ["mp4", "mkv"])
    func aPreRollResume(container: String) throws {
        let scratch = try RecordScratch()
        let name = "out.\(container)"
        let recorder = try RunningRecorder(Self.devices + ["--start-paused", "--pre-roll", "1s", name], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "paused" }
        usleep(1_500_000)
        try recorder.waitForMedia(try recorder.resume() + 1)
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "\(recorder.stderr)")
        try Self.check(Self.reported(try Self.finished(recorder), file: name), in: scratch, "pre-roll")
    }

    /// Chromium plays paused recordings in MP4, M4A and WebM for as long as
    /// capctl said, from a server that answers no range requests.
    @Test func chromiumPlaysPausedRecordings() throws {
        let scratch = try RecordScratch()
        try HybridReaderTests.page.write(toFile: scratch.file("page.html"), atomically: true, encoding: .utf8)
        let server = try HybridReaderTests.Server(in: scratch.url)
        try #require(server.port > 0)
        for (name, devices) in [("out.mp4", Self.devices), ("out.webm", Self.devices), ("out.m4a", ["--audio", "test-tone"])] {
            let recorder = try Self.record(devices + [name], pauses: 1, in: scratch)
            let duration = try #require(try Self.finished(recorder)["duration"] as? Double)
            let reports = try HybridReaderTests.chromium(name, port: server.port, in: scratch.url)
            #expect(!reports.contains { $0.what == "error" }, "\(name): Chromium reported \(reports)")
            let ended = try #require(reports.first { $0.what == "ended" }, "\(name): Chromium reported \(reports)")
            #expect(abs(ended.duration - duration) <= Self.frame && abs(ended.time - duration) <= Self.frame,
                    "\(name): Chromium ended at \(ended.time) of \(ended.duration) s; \(duration) s recorded")
        }
    }
}
