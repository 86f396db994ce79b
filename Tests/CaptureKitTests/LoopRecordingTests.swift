import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// Loop recording: a recorder with a retention deletes its oldest files as
/// it finishes new ones, counts an earlier run's files and numbers on after
/// them, never touches a file being written or one its template could not
/// have made, and at the free-space floor deletes rather than stops (on a
/// volume whose free space the test decides).
@Suite struct LoopRecordingTests {
    /// What the delegate heard: files finished and files deleted, in order.
    final class Heard: CaptureRecorderDelegate {
        private let log = Mutex<[String]>([])
        private let deleted = Mutex<[(path: String, bytes: Int64, reason: RecordingFileDeletionReason)]>([])
        private let finished = Mutex<[RecordedFile]>([])

        var events: [String] { log.withLock { $0 } }
        var deletions: [(path: String, bytes: Int64, reason: RecordingFileDeletionReason)] { deleted.withLock { $0 } }
        var files: [RecordedFile] { finished.withLock { $0 } }

        func recorder(_ recorder: CaptureRecorder, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            finished.withLock { $0.append(file) }
            log.withLock { $0.append("finished \(Self.name(file.path))") }
        }

        func recorder(_ recorder: CaptureRecorder, didDeleteFile path: String, bytes: Int64, reason: RecordingFileDeletionReason) {
            deleted.withLock { $0.append((path, bytes, reason)) }
            log.withLock { $0.append("deleted \(Self.name(path))") }
        }

        static func name(_ path: String) -> String { (path as NSString).lastPathComponent }
    }

    static let quarter = MediaTime(value: 1, timescale: 4)

    /// A camera played as fast as the files are written.
    static func session() throws -> CaptureSession {
        let session = CaptureSession()
        session.addInput(try CaptureInput(camera: "test-pattern", request: CaptureVideoRequest(width: 160, height: 120), realtime: false))
        return session
    }

    /// A recording of `seconds` in quarter-second segments to `template` in `scratch`.
    static func configuration(_ scratch: WriterScratchDirectory, _ template: String, seconds: Double,
                              retention: RecordingRetention) -> CaptureRecorderConfiguration {
        var configuration = CaptureRecorderConfiguration(destination: scratch.file(template))
        configuration.settings.realTime = false
        configuration.maxDuration = MediaTime(seconds: seconds, preferredTimescale: 1000)
        configuration.segmentDuration = quarter
        configuration.minFreeSpace = 0
        configuration.retention = retention
        return configuration
    }

    static func record(_ configuration: CaptureRecorderConfiguration, heard: Heard,
                       freeSpace: (@Sendable (String) -> Int64?)? = nil) throws -> CaptureRecorderEnd {
        let recorder = try CaptureRecorder(configuration, delegate: heard)
        if let freeSpace { recorder.fileOutput?.freeSpaceQuery = freeSpace }
        try recorder.checkDestination()
        let session = try session()
        try recorder.start(on: session)
        #expect(recorder.waitUntilEnded(timeout: 60))
        let end = recorder.finish()
        session.stopRunning()
        return end
    }

    static func contents(_ scratch: WriterScratchDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []).sorted()
    }

    @Test func aCountKeepsTheNewestFilesAndSaysWhichWentAfterEachFinish() throws {
        let scratch = try WriterScratchDirectory()
        let heard = Heard()
        let end = try Self.record(Self.configuration(scratch, "seg-%n.mp4", seconds: 2, retention: RecordingRetention(maxFiles: 3)), heard: heard)
        #expect(end.reason == .maxDuration)
        #expect(Self.contents(scratch) == ["seg-6.mp4", "seg-7.mp4", "seg-8.mp4"])
        // Each deletion follows the finish that made one file too many.
        var expected: [String] = []
        for number in 1...8 {
            expected.append("finished seg-\(number).mp4")
            if number > 3 { expected.append("deleted seg-\(number - 3).mp4") }
        }
        #expect(heard.events == expected)
        #expect(heard.deletions.allSatisfy { $0.reason == .maxFiles })
        let written = Dictionary(uniqueKeysWithValues: heard.files.map { ($0.path, $0.bytes) })
        for deletion in heard.deletions { #expect(written[deletion.path] == deletion.bytes, "\(deletion.path)") }
        // The totals: what was written, what is left, what went.
        #expect(end.statistics.files == (6...8).map { scratch.file("seg-\($0).mp4") })
        #expect(end.statistics.fileCount == 8)
        #expect(end.statistics.deletedFileCount == 5)
        #expect(end.statistics.deletedBytes == heard.deletions.map(\.bytes).reduce(0, +))
        #expect(end.statistics.bytes == heard.files.map(\.bytes).reduce(0, +))
        #expect(end.statistics.videoFrames == 60)
    }

    /// A run started again numbers on after the files there, counts them
    /// as its oldest, and never touches a name the template could not have written.
    @Test func aRestartNumbersOnAndCountsTheEarlierFiles() throws {
        let scratch = try WriterScratchDirectory()
        for name in ["seg-1.mp4", "seg-2.mp4", "seg-10.mp4"] { try Data("earlier".utf8).write(to: URL(fileURLWithPath: scratch.file(name))) }
        let strangers = ["seg-010.mp4", "seg-11.mkv", "seg-x.mp4", "seg-12.mp4.part", "notes.txt"]
        for name in strangers { try Data("mine".utf8).write(to: URL(fileURLWithPath: scratch.file(name))) }
        let heard = Heard()
        let end = try Self.record(Self.configuration(scratch, "seg-%n.mp4", seconds: 1, retention: RecordingRetention(maxFiles: 2)), heard: heard)
        #expect(end.reason == .maxDuration)
        #expect(heard.files.map { Heard.name($0.path) } == ["seg-11.mp4", "seg-12.mp4", "seg-13.mp4", "seg-14.mp4"])
        #expect(heard.deletions.map { Heard.name($0.path) } == ["seg-1.mp4", "seg-2.mp4", "seg-10.mp4", "seg-11.mp4", "seg-12.mp4"])
        #expect(heard.deletions.prefix(3).allSatisfy { $0.bytes == 7 })
        #expect(Self.contents(scratch) == (["seg-13.mp4", "seg-14.mp4"] + strangers).sorted())
        for name in strangers { #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.file(name))) == Data("mine".utf8)) }
    }

    /// A file another recording is writing now, though its name is the
    /// template's, is neither counted nor deleted.
    @Test func aFileBeingWrittenIsNeverDeleted() throws {
        let scratch = try WriterScratchDirectory()
        let session = try Self.session()
        try session.startRunning()
        defer { session.stopRunning() }
        var first = CaptureRecorderConfiguration(destination: scratch.file("seg-%n.mp4"))
        first.settings.realTime = false
        let writing = try CaptureRecorder(first)
        try writing.start(on: session)
        #expect(eventually { FileManager.default.fileExists(atPath: scratch.file("seg-1.mp4")) })

        let heard = Heard()
        let loop = try CaptureRecorder(Self.configuration(scratch, "seg-%n.mp4", seconds: 1, retention: RecordingRetention(maxFiles: 1)),
                                       delegate: heard)
        try loop.start(on: session)
        #expect(loop.waitUntilEnded(timeout: 60))
        _ = loop.finish()
        #expect(heard.files.map { Heard.name($0.path) } == ["seg-2.mp4", "seg-3.mp4", "seg-4.mp4", "seg-5.mp4"])
        #expect(heard.deletions.map { Heard.name($0.path) } == ["seg-2.mp4", "seg-3.mp4", "seg-4.mp4"])
        #expect(FileManager.default.fileExists(atPath: scratch.file("seg-1.mp4")))
        writing.stop()
        let end = writing.finish()
        #expect(end.statistics.files == [scratch.file("seg-1.mp4")])
        #expect(end.statistics.videoFrames > 0)
    }

    @Test func anAgeDeletesWhatWasWrittenLongAgo() throws {
        let scratch = try WriterScratchDirectory()
        let old = "cam-20200101-000000.mp4", recent = "cam-20200101-000001.mp4"
        for name in [old, recent] { try Data("earlier".utf8).write(to: URL(fileURLWithPath: scratch.file(name))) }
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3_600)], ofItemAtPath: scratch.file(old))
        let heard = Heard()
        let retention = RecordingRetention(maxAge: MediaTime(seconds: 600, preferredTimescale: 1))
        let end = try Self.record(Self.configuration(scratch, "cam-%Y%m%d-%H%M%S.mp4", seconds: 0.5, retention: retention), heard: heard)
        #expect(end.reason == .maxDuration)
        #expect(heard.deletions.map { Heard.name($0.path) } == [old])
        #expect(heard.deletions.map(\.reason) == [.maxAge])
        #expect(FileManager.default.fileExists(atPath: scratch.file(recent)))
        #expect(heard.files.count == 2)
        for file in heard.files { #expect(FileManager.default.fileExists(atPath: file.path)) }
    }

    /// On a volume of 150 kB with a 60 kB floor, deleting the oldest files
    /// lets a recording go on far past what the volume holds; what is left
    /// is the newest files, and every other file written was reported deleted.
    @Test func atTheFloorTheOldestFilesGoAndTheRecordingGoesOn() throws {
        let scratch = try WriterScratchDirectory()
        let capacity: Int64 = 150_000, floor: Int64 = 60_000
        let folder = scratch.path
        // Each time the recording asks, the volume's free space; the least of them is kept.
        let least = Mutex<Int64>(capacity)
        let volume: @Sendable (String) -> Int64? = { _ in
            let free = capacity - Self.bytes(in: folder)
            least.withLock { $0 = min($0, free) }
            return free
        }
        var configuration = Self.configuration(scratch, "seg-%3n.mkv", seconds: 20, retention: RecordingRetention(lowSpace: .deleteOldest))
        configuration.minFreeSpace = floor
        let heard = Heard()
        let end = try Self.record(configuration, heard: heard, freeSpace: volume)
        #expect(end.reason == .maxDuration, "\(String(describing: end.error))")
        let written = heard.files.map(\.path)
        let total = heard.files.map(\.bytes).reduce(0, +)
        #expect(total > capacity, "only \(total) bytes written: the test proves nothing")
        #expect(!heard.deletions.isEmpty)
        #expect(heard.deletions.allSatisfy { $0.reason == .lowSpace })
        // The oldest went, in order; the rest are there.
        let deleted = heard.deletions.map(\.path)
        #expect(deleted == Array(written.prefix(deleted.count)))
        let left = written.dropFirst(deleted.count).map(Heard.name)
        #expect(Self.contents(scratch) == left.sorted())
        // The floor was kept whenever the volume was asked, and at the end.
        #expect(least.withLock { $0 } >= floor, "\(least.withLock { $0 }) bytes free at the least")
        #expect(capacity - Self.bytes(in: folder) >= floor, "\(Self.bytes(in: folder)) bytes left")
    }

    /// Only the file being written left: the floor stops the recording as
    /// without a retention, after deleting the template's files (and no other).
    @Test func atTheFloorWithNothingLeftToDeleteTheRecordingStops() throws {
        let scratch = try WriterScratchDirectory()
        for name in ["seg-1.mp4", "seg-2.mp4"] { try Data("earlier".utf8).write(to: URL(fileURLWithPath: scratch.file(name))) }
        try Data("mine".utf8).write(to: URL(fileURLWithPath: scratch.file("other.mp4")))
        var configuration = Self.configuration(scratch, "seg-%n.mp4", seconds: 10, retention: RecordingRetention(lowSpace: .deleteOldest))
        configuration.minFreeSpace = 1_000_000
        let heard = Heard()
        let end = try Self.record(configuration, heard: heard) { _ in 10_000 }
        #expect(end.reason == .minFreeSpace)
        #expect(end.statistics.duration.seconds < 1)
        #expect(heard.deletions.map { Heard.name($0.path) } == ["seg-1.mp4", "seg-2.mp4"])
        #expect(FileManager.default.fileExists(atPath: scratch.file("other.mp4")))
        // The file it stopped in is complete and kept.
        let last = try #require(heard.files.last)
        #expect(FileManager.default.fileExists(atPath: last.path))
        #expect(last.videoFrames > 0)
    }

    @Test func aRetentionIsRefusedWhereItCannotWork() throws {
        let scratch = try WriterScratchDirectory()
        let keep = RecordingRetention(maxFiles: 2)
        func refused(_ destination: String?, segmented: Bool = true, _ retention: RecordingRetention = keep) -> Bool {
            var configuration = CaptureRecorderConfiguration(destination: destination.map(scratch.file))
            if segmented { configuration.segmentDuration = Self.quarter }
            configuration.retention = retention
            return (try? CaptureRecorder(configuration)) == nil
        }
        #expect(refused("angle%c.mp4"))
        #expect(refused("seg-%n.mp4", segmented: false))
        #expect(refused("%Y/seg-%n.mp4"))
        #expect(refused(nil))
        #expect(refused("seg-%n.mp4", RecordingRetention(maxFiles: 0)))
        #expect(!refused("seg-%n.mp4"))
        #expect(!refused("seg-%Y%m%d-%H%M%S.mp4"))
        #expect(!refused("seg.mp4", segmented: false, RecordingRetention()))
    }

    static func bytes(in folder: String) -> Int64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.reduce(Int64(0)) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int64) ?? 0)
        }
    }
}
