import Foundation
import Testing
@testable import CaptureKit

/// Chapters an `AssetWriter` writes from points marked on the file's
/// timeline, in each layout, read back by ffprobe and by `MediaInfo`.
@Suite struct ChapterWriterTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    /// The chapters ffprobe reads: start, end (seconds) and title.
    static func probedChapters(_ path: String) throws -> [(start: Double, end: Double, title: String)] {
        let chapters = try FFprobe.json(["-show_chapters", path])["chapters"] as? [[String: Any]] ?? []
        return chapters.map { chapter in
            (Double(chapter["start_time"] as? String ?? "") ?? .nan, Double(chapter["end_time"] as? String ?? "") ?? .nan,
             (chapter["tags"] as? [String: Any])?["title"] as? String ?? "")
        }
    }

    @Test func chaptersRunFromEachPointToTheNextAndNoneIsMadeUpAtTheStart() {
        let time = { (seconds: Double) in MediaTime(seconds: seconds, preferredTimescale: 1000) }
        let chapters = Chapters.chapters(from: [(time(1.5), "b"), (time(0.5), "a"), (time(1.5), "c"), (time(9), "late")], duration: time(3))
        #expect(chapters.map(\.title) == ["a", "b", "c", "late"])
        #expect(chapters.map(\.start.seconds) == [0.5, 1.5, 1.5, 3])
        #expect(chapters.map(\.end.seconds) == [1.5, 1.5, 3, 3])
    }

    @Test func theNeroChapterBoxHoldsStartsIn100NanosecondsAndTitlesOfAtMost255Bytes() {
        let long = String(repeating: "é", count: 200)
        let box = Chapters.neroChapterBox([MediaChapter(start: MediaTime(value: 3, timescale: 2), end: .zero, title: "Tür"),
                                           MediaChapter(start: MediaTime(value: 2, timescale: 1), end: .zero, title: long)])
        #expect(box.type == "chpl")
        let bytes = box.payload
        #expect(Array(bytes[0..<9]) == [1, 0, 0, 0, 0, 0, 0, 0, 2])
        #expect(BigEndian.uint64(bytes, at: 9) == 15_000_000)
        #expect(bytes[17] == 4 && String(decoding: bytes[18..<22], as: UTF8.self) == "Tür")
        #expect(BigEndian.uint64(bytes, at: 22) == 20_000_000)
        #expect(bytes[30] == 255 && bytes.count == 31 + 255)
    }

    /// 2 s of video in two sessions with a pause between them, chapters at
    /// 0.5 s and 1.5 s of the file's timeline (the second after the pause).
    static func write(_ path: String, fragments: MediaTime?, keepFragments: Bool = false, faststart: Bool = false) throws -> AssetWriter {
        let writer = try AssetWriter(outputPath: path)
        if let fragments { writer.movieFragmentInterval = fragments }
        writer.keepsMovieFragments = keepFragments
        writer.shouldOptimizeForNetworkUse = faststart
        let codec: VideoCodec = path.hasSuffix(".webm") ? .vp9 : .h264
        let video = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: codec, width: 160, height: 120, quality: 30, maxKeyFrameInterval: 15, expectedFrameDuration: frameDuration)))
        try writer.add(video)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<30 { try video.append(NumberedFrames.make(number, width: 160, height: 120), presentationTime: frameDuration * Int64(number)) }
        try writer.endSession(atSourceTime: MediaTime(value: 1, timescale: 1))
        try writer.addChapter(title: "before the pause", at: MediaTime(value: 1, timescale: 2))
        try writer.startSession(atSourceTime: MediaTime(value: 5, timescale: 1))
        for number in 150..<180 { try video.append(NumberedFrames.make(number, width: 160, height: 120), presentationTime: frameDuration * Int64(number)) }
        try writer.addChapter(title: "after the pause – ü", at: MediaTime(value: 3, timescale: 2))
        try writer.finishWriting()
        return writer
    }

    @Test(arguments: ["fragmented.mp4", "regular.mp4", "faststart.mp4", "fragmented.mov", "regular.mov", "clip.mkv", "clip.webm"])
    func everyLayoutThatEndsCleanlyCarriesTheChapters(name: String) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file(name)
        let writer = try Self.write(path, fragments: name.hasPrefix("fragmented") ? MediaTime(value: 1, timescale: 2) : nil,
                                    faststart: name.hasPrefix("faststart"))
        #expect(writer.writesChapters)
        let chapters = try Self.probedChapters(path)
        #expect(chapters.map(\.title) == ["before the pause", "after the pause – ü"])
        #expect(chapters.map(\.start) == [0.5, 1.5], "\(chapters)")
        #expect(chapters.map(\.end) == [1.5, 2.0], "\(chapters)")
        let info = try MediaInfo.read(path: path)
        #expect(info.chapters.map(\.title) == ["before the pause", "after the pause – ü"])
        #expect(info.chapters.map { ($0.start.seconds * 1000).rounded() } == [500, 1500])
        #expect(info.chapters.map { ($0.end.seconds * 1000).rounded() } == [1500, 2000])
        // The file's media is untouched: every frame still plays.
        #expect(try FFprobe.frames(path).count == 60)
        if name.hasSuffix(".mp4") || name.hasSuffix(".mov") {
            // One Nero chapter box, in the movie's own user data.
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(Boxes.find(bytes, ["moov", "udta", "chpl"]).count == 1)
            #expect(Boxes.find(bytes, ["moov", "trak"]).count == 1, "no chapter track beside the video")
        }
    }

    @Test(arguments: ["kept.mp4", "clip.ts"])
    func filesWithoutRoomForChaptersHaveNone(name: String) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file(name)
        let writer = try Self.write(path, fragments: name == "kept.mp4" ? MediaTime(value: 1, timescale: 2) : nil, keepFragments: true)
        #expect(!writer.writesChapters)
        #expect(try Self.probedChapters(path).isEmpty)
        #expect(try MediaInfo.read(path: path).chapters.isEmpty)
    }

    @Test func theChapterLogKeepsWhatFitsAndSaysSo() throws {
        let points = [ChapterLog.Point(time: MediaTime(value: 1, timescale: 3), title: "Tür"),
                      ChapterLog.Point(time: MediaTime(value: 12_000_000_001, timescale: 1_000_000_000), title: "")]
        let box = ChapterLog(points: points).box()
        #expect(box.count == ChapterLog.boxSize)
        #expect(ChapterLog(payload: Array(box[8...])) == ChapterLog(points: points))
        #expect(ChapterLog(payload: [UInt8](repeating: 0, count: 100)) == nil)
        let many = (0..<100).map { ChapterLog.Point(time: MediaTime(value: Int64($0), timescale: 1), title: String(repeating: "x", count: 255)) }
        let payload = ChapterLog(points: many).payload()
        let read = try #require(ChapterLog(payload: payload))
        #expect(read.points.count == (ChapterLog.boxSize - 8 - 24) / (13 + 255))
        #expect(read.points == Array(many.prefix(read.points.count)))
        #expect(BigEndian.uint32(payload, at: 20) == 1, "says chapters were left out")
    }

    /// A fragmented recording killed before its finish keeps its chapters
    /// in the file; repair writes those within the media it saves.
    @Test func aKilledFragmentedRecordingGetsItsChaptersFromRepair() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("recording.mp4")
        let writer = try AssetWriter(outputPath: path)
        writer.movieFragmentInterval = MediaTime(value: 1, timescale: 2)
        let video = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 160, height: 120, quality: 30, maxKeyFrameInterval: 15, expectedFrameDuration: Self.frameDuration)))
        try writer.add(video)
        // One before the header is written, the others as the media comes.
        try writer.addChapter(title: "at the start", at: .zero)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<90 {
            if number == 36 { try writer.addChapter(title: "the door opened", at: MediaTime(value: 6, timescale: 5)) }
            if number == 89 { try writer.addChapter(title: "never saved", at: MediaTime(value: 29, timescale: 10)) }
            try video.append(NumberedFrames.make(number, width: 160, height: 120), presentationTime: Self.frameDuration * Int64(number))
        }
        let killed = scratch.file("killed.mp4")
        try FileManager.default.copyItem(atPath: path, toPath: killed)
        try writer.finishWriting()
        #expect(try Self.probedChapters(killed).isEmpty, "a killed recording has no chapters before its repair")

        let result = try MovieRepair.repair(path: killed)
        #expect(result.outcome == .repaired)
        #expect(result.duration.seconds < 2.9, "the last fragment was never written: \(result.duration.seconds)")
        #expect(result.chapters.map(\.title) == ["at the start", "the door opened"])
        let chapters = try Self.probedChapters(killed)
        #expect(chapters.map(\.title) == ["at the start", "the door opened"])
        #expect(chapters.map(\.start) == [0, 1.2])
        #expect(abs((chapters.last?.end ?? 0) - result.duration.seconds) < 0.001)
        // The finished file has all three.
        #expect(try Self.probedChapters(path).map(\.title) == ["at the start", "the door opened", "never saved"])
    }

    @Test func aChapterCannotBeAddedOnceTheFileIsFinished() throws {
        let scratch = try WriterScratchDirectory()
        let writer = try Self.write(scratch.file("done.mkv"), fragments: nil)
        #expect(throws: WriterError.self) { try writer.addChapter(title: "late", at: .zero) }
        let fresh = try AssetWriter(outputPath: scratch.file("fresh.mkv"))
        #expect(throws: WriterError.self) { try fresh.addChapter(title: "before 0", at: MediaTime(value: -1, timescale: 1)) }
    }
}
