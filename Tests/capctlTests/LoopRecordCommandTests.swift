import Foundation
import Glibc
import Testing

/// `capctl record` as a loop recorder (--keep-files, --keep-size,
/// --keep-age) on the virtual camera, and the service taking the same
/// settings: which files are left, that they play, what the events say,
/// and that no other file is touched.
@Suite(.serialized) struct LoopRecordCommandTests {
    static let small = ["--video", "test-pattern", "--size", "320x240"]

    static func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    static func named(_ name: String, in events: [[String: Any]]) -> [[String: Any]] {
        events.filter { $0["event"] as? String == name }
    }

    static func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// 1 s segments for 8 s with --keep-files 3: the three newest are left,
    /// each plays whole, and file-deleted named every other one, after the
    /// segment event that made it one too many.
    @Test func keepFilesLeavesTheNewestThatPlay() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.small + ["--no-realtime", "--max-duration", "8", "--segment-duration", "1",
                                                                  "--keep-files", "3", "--progress", "json", "seg-%n.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty)
        let events = Self.events(result.stdout)
        #expect(scratch.contents == ["seg-6.mp4", "seg-7.mp4", "seg-8.mp4"])
        let segments = Self.named("segment", in: events)
        #expect(segments.count == 8)
        for name in scratch.contents {
            let segment = try #require(segments.first { $0["file"] as? String == name })
            #expect(try decodedFrames(scratch.file(name)) == 30, "\(name)")
            #expect(segment["frames"] as? Int == 30)
            #expect(segment["bytes"] as? Int == Self.size(scratch.file(name)))
        }
        let deleted = Self.named("file-deleted", in: events)
        #expect(deleted.map { $0["file"] as? String } == (1...5).map { "seg-\($0).mp4" })
        #expect(deleted.allSatisfy { $0["reason"] as? String == "keep-files" })
        for event in deleted {
            let segment = segments.first { $0["file"] as? String == event["file"] as? String }
            #expect(event["bytes"] as? Int == segment?["bytes"] as? Int, "\(event)")
        }
        // Each deletion comes right after the segment that made one file too many.
        let order = events.compactMap { event -> String? in
            switch event["event"] as? String {
            case "segment": return "+" + (event["file"] as? String ?? "")
            case "file-deleted": return "-" + (event["file"] as? String ?? "")
            default: return nil
            }
        }
        var expected: [String] = []
        for number in 1...8 {
            expected.append("+seg-\(number).mp4")
            if number > 3 { expected.append("-seg-\(number - 3).mp4") }
        }
        #expect(order == expected)
        let finished = try #require(events.last)
        #expect(finished["event"] as? String == "finished")
        #expect(finished["files"] as? [String] == ["seg-6.mp4", "seg-7.mp4", "seg-8.mp4"])
        #expect(finished["deletedFiles"] as? Int == 5)
        #expect(finished["deletedBytes"] as? Int == deleted.compactMap { $0["bytes"] as? Int }.reduce(0, +))
        // What was written, all of it.
        #expect(finished["bytes"] as? Int == segments.compactMap { $0["bytes"] as? Int }.reduce(0, +))
        #expect(finished["frames"] as? Int == 240)
    }

    /// The bound of --keep-size is on the finished files: once a file is
    /// finished they fit in SIZE together, and the file being written comes
    /// on top. Sampled every 100 ms while recording in real time, the folder
    /// without its newest file (the one being written) never holds more than
    /// SIZE and one file more (the one just finished, at the moment the
    /// next begins), where without the bound it would hold all eight; at
    /// the end the files left are the newest that fit.
    @Test func keepSizeHoldsTheFolderUnderTheBound() throws {
        let scratch = try RecordScratch()
        let bound = 80_000
        let recorder = try RunningRecorder(Self.small + ["--max-duration", "8", "--segment-duration", "1", "--keep-size", "80K", "seg-%n.mp4"],
                                           in: scratch.url)
        var samples: [(total: Int, newest: Int)] = []
        while recorder.process.isRunning {
            let names = scratch.contents
            let sizes = names.map { Self.size(scratch.file($0)) }
            let newest = names.indices.max { Self.number(names[$0]) < Self.number(names[$1]) }
            samples.append((sizes.reduce(0, +), newest.map { sizes[$0] } ?? 0))
            usleep(100_000)
        }
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let events = recorder.events
        let segments = Self.named("segment", in: events)
        #expect(segments.count == 8)
        let largest = segments.compactMap { $0["bytes"] as? Int }.max() ?? 0
        let written = segments.compactMap { $0["bytes"] as? Int }.reduce(0, +)
        #expect(written > 2 * bound, "only \(written) bytes written: the bound is never reached")
        #expect(samples.count >= 40)
        for sample in samples {
            #expect(sample.total - sample.newest <= bound + largest, "\(sample.total) bytes in the folder, \(sample.newest) in the newest file")
        }
        // At the end: within the bound, and the next older file would not have fit.
        let left = scratch.contents
        let total = left.map { Self.size(scratch.file($0)) }.reduce(0, +)
        #expect(total <= bound)
        let deleted = Self.named("file-deleted", in: events)
        #expect(!deleted.isEmpty)
        #expect(deleted.allSatisfy { $0["reason"] as? String == "keep-size" })
        let lastDeleted = try #require(deleted.compactMap { $0["file"] as? String }.max { Self.number($0) < Self.number($1) })
        let lastDeletedBytes = try #require(segments.first { $0["file"] as? String == lastDeleted }?["bytes"] as? Int)
        #expect(total + lastDeletedBytes > bound)
        #expect(Set(left).isDisjoint(with: deleted.compactMap { $0["file"] as? String }))
        #expect(left.count + deleted.count == 8)
    }

    /// A second run numbers on after the first's files and counts them as
    /// its oldest; the files its template could not have written stay as they were.
    @Test func aRestartContinuesTheNumberingAndTheRetention() throws {
        let scratch = try RecordScratch()
        let arguments = ["record"] + Self.small + ["--no-realtime", "--max-duration", "3", "--segment-duration", "1", "--keep-files", "4",
                                                   "--progress", "json", "seg-%n.mp4"]
        let first = try CapctlRun.run(arguments, in: scratch.url)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(scratch.contents == ["seg-1.mp4", "seg-2.mp4", "seg-3.mp4"])
        let strangers = ["seg-01.mp4", "seg-4.mkv", "seg-x.mp4", "notes.txt", "seg-5.mp4.bak"]
        for name in strangers { try Data("keep me".utf8).write(to: scratch.url.appendingPathComponent(name)) }

        let second = try CapctlRun.run(arguments, in: scratch.url)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        let events = Self.events(second.stdout)
        #expect(Self.named("started", in: events).first?["file"] as? String == "seg-4.mp4")
        #expect(Self.named("segment", in: events).map { $0["file"] as? String } == ["seg-4.mp4", "seg-5.mp4", "seg-6.mp4"])
        #expect(Self.named("file-deleted", in: events).map { $0["file"] as? String } == ["seg-1.mp4", "seg-2.mp4"])
        #expect(scratch.contents == (["seg-3.mp4", "seg-4.mp4", "seg-5.mp4", "seg-6.mp4"] + strangers).sorted())
        for name in strangers { #expect(try Data(contentsOf: scratch.url.appendingPathComponent(name)) == Data("keep me".utf8)) }
        let finished = try #require(events.last)
        #expect(finished["files"] as? [String] == ["seg-4.mp4", "seg-5.mp4", "seg-6.mp4"])
        #expect(finished["deletedFiles"] as? Int == 2)
        for name in ["seg-3.mp4", "seg-4.mp4", "seg-5.mp4", "seg-6.mp4"] { #expect(try decodedFrames(scratch.file(name)) == 30, "\(name)") }
    }

    /// Names with time fields and no %n (the dashcam's): the newest stay, whatever the second they fall in.
    @Test func aTemplateOfTimesKeepsItsNewest() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + Self.small + ["--no-realtime", "--max-duration", "5", "--segment-duration", "1",
                                                                  "--keep-files", "2", "--progress", "json", "dash-%Y%m%d-%H%M%S.mp4"],
                                       in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = Self.events(result.stdout)
        let written = Self.named("segment", in: events).compactMap { $0["file"] as? String }
        #expect(written.count == 5)
        #expect(scratch.contents == Array(written.suffix(2)).sorted())
        #expect(Self.named("file-deleted", in: events).compactMap { $0["file"] as? String } == Array(written.prefix(3)))
    }

    /// The service takes record's options as JSON: keepFiles works there,
    /// and its file-deleted events carry the recording.
    @Test func theServiceKeepsFilesAndSaysWhichItDeleted() throws {
        let service = try ServiceFixture()
        let created = try service.request("POST", "/recordings",
                                          json: #"{"file": "loop-%n.mp4", "segmentDuration": 1, "keepFiles": 2, "maxDuration": "4s"}"#)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json["id"] as? String)
        let finished = try #require(service.waitForEvent("finished", recording: id, seconds: 30))
        #expect(finished["files"] as? [String] == ["loop-3.mp4", "loop-4.mp4"])
        #expect(finished["deletedFiles"] as? Int == 2)
        let deleted = service.events("file-deleted", recording: id)
        #expect(deleted.map { $0["file"] as? String } == ["loop-1.mp4", "loop-2.mp4"])
        #expect(deleted.allSatisfy { $0["reason"] as? String == "keep-files" && ($0["bytes"] as? Int ?? 0) > 0 })
        #expect(service.files == ["loop-3.mp4", "loop-4.mp4"])
        let refused = try service.request("POST", "/recordings", json: #"{"file": "one.mp4", "keepFiles": 2}"#)
        #expect(refused.status == 400)
        #expect((refused.json["error"] as? String)?.contains("keepFiles") == true, "\(refused.text)")
        #expect(service.stop() == 0)
    }

    /// The number a name of these tests' templates carries (seg-12.mp4 → 12).
    static func number(_ name: String) -> Int {
        Int(name.split(separator: "-").last?.split(separator: ".").first ?? "") ?? 0
    }
}
