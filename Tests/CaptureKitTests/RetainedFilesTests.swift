import Foundation
import Testing
@testable import CaptureKit

/// A retention's policy on values, and the folder it starts from: which
/// files each bound condemns, in which order, and which files it never
/// counts.
@Suite struct RetainedFilesTests {
    static func file(_ name: String, bytes: Int64 = 100, modified: Double = 1_000) -> RetainedFile {
        RetainedFile(path: name, bytes: bytes, modified: modified)
    }

    static func names(_ condemned: [(file: RetainedFile, reason: RecordingFileDeletionReason)]) -> [String] {
        condemned.map(\.file.path)
    }

    @Test func aCountKeepsTheNewest() {
        var files = RetainedFiles(retention: RecordingRetention(maxFiles: 3))
        for number in 1...5 { files.add(Self.file("f\(number)")) }
        let condemned = files.condemned(now: 2_000)
        #expect(Self.names(condemned) == ["f1", "f2"])
        #expect(condemned.allSatisfy { $0.reason == .maxFiles })
    }

    /// The newest files that fit stay; a file finished that alone passes
    /// the bound stays too (the one just finished is never lost to a size).
    @Test func aSizeKeepsTheNewestThatFit() {
        var files = RetainedFiles(retention: RecordingRetention(maxBytes: 1_000))
        for (number, bytes) in [(1, 300), (2, 300), (3, 300), (4, 300)] { files.add(Self.file("f\(number)", bytes: Int64(bytes))) }
        #expect(Self.names(files.condemned(now: 0)) == ["f1"])
        files.add(Self.file("f5", bytes: 950))
        #expect(Self.names(files.condemned(now: 0)) == ["f1", "f2", "f3", "f4"])
        files.add(Self.file("f6", bytes: 5_000))
        let condemned = files.condemned(now: 0)
        #expect(Self.names(condemned) == ["f1", "f2", "f3", "f4", "f5"])
        #expect(condemned.allSatisfy { $0.reason == .maxBytes })
    }

    @Test func anAgeCondemnsWhatWasWrittenTooLongAgoWhateverItsPlace() {
        var files = RetainedFiles(retention: RecordingRetention(maxAge: MediaTime(seconds: 60, preferredTimescale: 1)))
        files.add(Self.file("old", modified: 1_000))
        files.add(Self.file("touched", modified: 1_950))
        files.add(Self.file("older", modified: 900))
        let condemned = files.condemned(now: 2_000)
        #expect(Self.names(condemned) == ["old", "older"])
        #expect(condemned.allSatisfy { $0.reason == .maxAge })
        // The newest goes too once it is old: an age bound keeps nothing for its own sake.
        #expect(Self.names(files.condemned(now: 10_000)) == ["old", "touched", "older"])
    }

    /// Each file is condemned once, for the first bound it passes (age, count, size), oldest first.
    @Test func boundsTogetherCondemnEachFileOnceOldestFirst() {
        var files = RetainedFiles(retention: RecordingRetention(maxFiles: 3, maxBytes: 500, maxAge: MediaTime(seconds: 100, preferredTimescale: 1)))
        files.add(Self.file("a", bytes: 100, modified: 100))    // too old
        files.add(Self.file("b", bytes: 100, modified: 1_000))  // beyond 3 files
        files.add(Self.file("c", bytes: 300, modified: 1_000))  // beyond 500 bytes
        files.add(Self.file("d", bytes: 200, modified: 1_000))
        files.add(Self.file("e", bytes: 200, modified: 1_000))
        let condemned = files.condemned(now: 1_050)
        #expect(Self.names(condemned) == ["a", "b", "c"])
        #expect(condemned.map(\.reason) == [.maxAge, .maxFiles, .maxBytes])
    }

    /// A file being written (here by another recording) is neither counted nor deleted.
    @Test func aFileInUseIsNeverCondemned() {
        var files = RetainedFiles(retention: RecordingRetention(maxFiles: 1, lowSpace: .deleteOldest))
        for name in ["a", "b", "c"] { files.add(Self.file(name)) }
        let condemned = files.condemned(now: 0) { $0 == "a" }
        #expect(Self.names(condemned) == ["b"])
        #expect(files.oldest { $0 == "a" }?.path == "b")
        #expect(files.oldest { _ in true } == nil)
    }

    @Test func aFileFinishedAgainMovesToTheNewestPlace() {
        var files = RetainedFiles(retention: RecordingRetention(maxFiles: 1))
        files.add(Self.file("a"))
        files.add(Self.file("b"))
        files.add(Self.file("a", bytes: 7))
        #expect(files.files.map(\.path) == ["b", "a"])
        files.remove("b")
        #expect(files.files.map(\.path) == ["a"])
        #expect(files.condemned(now: 0).isEmpty)
    }

    // MARK: The folder

    /// The files of the template already there, oldest first by the time
    /// in their names (then their number), and nothing else: not other
    /// names, not a folder or a link that has a matching name, though such
    /// a name still counts for the numbering.
    @Test func theScanFindsTheTemplatesRegularFilesOldestFirst() throws {
        let tree = try TemporaryTree()
        let names = ["cam-20240102-000000-3.mp4", "cam-20231231-235959-9.mp4", "cam-20240102-000000-2.mp4"]
        for name in names { try tree.file(name, "x") }
        for other in ["cam-20240102-000000-02.mp4", "cam-20240102-000000-4.mkv", "notes.txt", "cam-20240102-000000-5.mp4.part"] {
            try tree.file(other, "keep")
        }
        try FileManager.default.createDirectory(atPath: tree.root + "/cam-20240102-000000-40.mp4", withIntermediateDirectories: false)
        try tree.link("cam-20240102-000000-41.mp4", to: tree.root + "/notes.txt")
        let scan = TemplateFolderScan(try FileNameTemplate(tree.root + "/cam-%Y%m%d-%H%M%S-%n.mp4"))
        #expect(scan.files.map(\.path) == [tree.root + "/cam-20231231-235959-9.mp4", tree.root + "/cam-20240102-000000-2.mp4",
                                            tree.root + "/cam-20240102-000000-3.mp4"])
        #expect(scan.files.allSatisfy { $0.bytes == 1 })
        #expect(scan.highestNumber == 41)
    }

    /// Without times in the names, the number orders them (numerically, not as text).
    @Test func withoutTimesTheNumberOrdersTheFiles() throws {
        let tree = try TemporaryTree()
        for name in ["seg-10.mp4", "seg-9.mp4", "seg-100.mp4", "seg-1.mp4"] { try tree.file(name) }
        let scan = TemplateFolderScan(try FileNameTemplate(tree.root + "/seg-%n.mp4"))
        #expect(scan.files.map { ($0.path as NSString).lastPathComponent } == ["seg-1.mp4", "seg-9.mp4", "seg-10.mp4", "seg-100.mp4"])
        #expect(scan.highestNumber == 100)
    }

    @Test func aFolderThatIsNotThereHoldsNothing() throws {
        let scan = TemplateFolderScan(try FileNameTemplate("/nonexistent-capctl-folder/seg-%n.mp4"))
        #expect(scan.files.isEmpty)
        #expect(scan.highestNumber == 0)
    }
}
