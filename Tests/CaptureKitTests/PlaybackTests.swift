import Foundation
import Testing
@testable import CaptureKit

/// The pull-model video output, media info and time parsing.
@Suite struct PlaybackTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    /// 90 numbered frames (3 s), keyframes every 30, optionally fragmented
    /// (and kept so when finished).
    static func clip(_ path: String, fragment: MediaTime? = nil) throws {
        let writer = try AssetWriter(outputPath: path)
        if let fragment {
            writer.movieFragmentInterval = fragment
            writer.keepsMovieFragments = true
        }
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 320, height: 240, quality: 25, preset: "veryfast", maxKeyFrameInterval: 30,
            expectedFrameDuration: frameDuration)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<90 { try input.append(NumberedFrames.make(number), presentationTime: frameDuration * Int64(number)) }
        try writer.finishWriting()
    }

    @Test func successiveTimesDecodeForwardWithoutSeeking() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("clip.mp4")
        try Self.clip(path)
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: .gray8)
        // A display at 60 Hz pulling a 30 fps clip: every frame twice.
        var shown = [Int]()
        var fresh = 0
        for tick in 0..<180 {
            let time = MediaTime(value: Int64(tick), timescale: 60)
            if try output.hasNewPixelBuffer(forItemTime: time) {
                fresh += 1
                let buffer = try #require(try output.copyPixelBuffer(forItemTime: time))
                shown.append(NumberedFrames.read(buffer))
            }
        }
        #expect(shown == Array(0..<90))
        #expect(fresh == 90)
        #expect(output.seekCount == 0)
        // Going back seeks once; jumping far ahead past a keyframe seeks too.
        let back = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(value: 1, timescale: 2)))
        #expect(NumberedFrames.read(back) == 15)
        #expect(output.seekCount == 1)
        let ahead = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(value: 5, timescale: 2)))
        #expect(NumberedFrames.read(ahead) == 75)
        #expect(output.seekCount == 2)
        // The display time of a frame, and a time past the end.
        var display = MediaTime.invalid
        let last = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(value: 10, timescale: 1), itemTimeForDisplay: &display))
        #expect(NumberedFrames.read(last) == 89)
        #expect(display == MediaTime(value: 89, timescale: 30))
        #expect(try output.hasNewPixelBuffer(forItemTime: MediaTime(value: 11, timescale: 1)) == false)
    }

    @Test func framesAreConvertedToTheAskedFormatAndSize() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("clip.mkv")
        try Self.clip(path)
        for format in [PixelFormat.rgb24, .bgra, .nv12, .yuv420p] {
            let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: format, size: (width: 640, height: 360))
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(value: 2, timescale: 1)))
            #expect(buffer.pixelFormat == format)
            #expect(buffer.width == 640 && buffer.height == 360)
            if format == .rgb24 || format == .bgra || format == .yuv420p || format == .nv12 {
                #expect(NumberedFrames.read(buffer) == 60, "\(format)")
            }
        }
    }

    @Test func aQuietClientIsToldWhenAGrowingRecordingHasNewFrames() throws {
        let scratch = try WriterScratchDirectory()
        let full = scratch.file("full.mp4")
        try Self.clip(full, fragment: MediaTime(value: 1, timescale: 1))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: full))
        let structure = try #require(try MovieStructure.read(path: full))
        #expect(structure.fragmentCount == 3)
        // The recording so far: up to the end of the first fragment.
        var offset = 0, ends = [Int]()
        while offset + 8 <= bytes.count {
            let size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self) == "mdat" { ends.append(offset + size) }
            offset += size
        }
        let growing = scratch.file("growing.mp4")
        try bytes.prefix(ends[0]).write(to: URL(fileURLWithPath: growing))
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: growing), pixelFormat: .gray8)
        let end = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(value: 2, timescale: 1)))
        #expect(NumberedFrames.read(end) == 29)
        #expect(output.isAtEnd)

        let notified = NotificationFlag()
        output.requestNotificationOfMediaDataChange(withAdvanceInterval: MediaTime(value: 1, timescale: 100)) { notified.set() }
        usleep(100_000)
        #expect(!notified.isSet, "nothing new yet")
        // The recorder writes the next fragment.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: growing))
        handle.seekToEndOfFile()
        handle.write(bytes[ends[0]..<ends[1]])
        try handle.close()
        for _ in 0..<200 where !notified.isSet { usleep(10_000) }
        #expect(notified.isSet)
        // (A fragmented file's timeline starts after the encoder's reordering
        // delay: two frames here.)
        let next = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(value: 3, timescale: 2) + Self.frameDuration * 2))
        #expect(NumberedFrames.read(next) == 45)
    }

    @Test func infoCountsFramesSamplesAndReadsTheLayout() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("clip.mov")
        try Self.clip(path)
        let info = try MediaInfo.read(path: path)
        #expect(info.tracks.count == 1)
        #expect(info.tracks[0].frameCount == 90)
        #expect((info.tracks[0].keyframeCount ?? 0) >= 3)
        #expect(info.tracks[0].duration == MediaTime(value: 3, timescale: 1))
        #expect(info.movieTimescale == 90000)
        #expect(info.fragmentCount == 0)
        #expect(info.isTruncated == false)

        let fragmented = scratch.file("live.mp4")
        try Self.clip(fragmented, fragment: MediaTime(value: 1, timescale: 2))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: fragmented))
        let cut = scratch.file("cut.mp4")
        try bytes.prefix(bytes.count * 2 / 3).write(to: URL(fileURLWithPath: cut))
        let partial = try MediaInfo.read(path: cut)
        #expect(partial.isTruncated)
        #expect((partial.fragmentCount ?? 0) >= 2)
        let frames = try #require(partial.tracks.first?.frameCount)
        #expect(frames >= 30 && frames < 90)

        #expect(throws: PlaybackError.noSuchFile(path: scratch.file("none.mp4"))) { try MediaInfo.read(path: scratch.file("none.mp4")) }
    }

    @Test(arguments: [("2.5", MediaTime(value: 5, timescale: 2)), ("90", MediaTime(value: 90, timescale: 1)),
                      ("0.1", MediaTime(value: 1, timescale: 10)), ("01:30", MediaTime(value: 90, timescale: 1)),
                      ("1:02.250", MediaTime(value: 249, timescale: 4)), ("01:00:00.001", MediaTime(value: 3_600_001, timescale: 1000)),
                      (".5", MediaTime(value: 1, timescale: 2)), ("3.", MediaTime(value: 3, timescale: 1))])
    func timesParse(text: String, expected: MediaTime) {
        #expect(MediaTime(parsing: text) == expected)
    }

    @Test(arguments: ["", "-1", "1:60", "1:2:3:4", "1:99:00", "abc", "1.2.3", "1e3", "1.0000000001", ":5", "1::2", " 1",
                      "153722867280912930:59", "2562047788015215:59:59"])
    func badTimesDoNotParse(text: String) {
        #expect(MediaTime(parsing: text) == nil)
    }

    @Test func editListsFollowSessionsAndCoverage() {
        var timeline = SessionTimeline()
        let s = { (value: Int64) in MediaTime(value: value, timescale: 10) }
        try? timeline.start(at: s(100))
        try? timeline.end(at: s(110))
        try? timeline.start(at: s(130))
        try? timeline.end(at: s(140))
        try? timeline.start(at: s(150))
        let sessions = timeline.closed(at: s(165))
        #expect(SessionTimeline.totalDuration(sessions) == s(35))
        #expect(timeline.fileTime(forSource: s(135)) == s(15))
        #expect(timeline.fileTime(forSource: s(120)) == nil)
        // Media covering 0.5 s … 1 s, then 3 s … 6.5 s from the origin (10 s).
        let track = SessionTimeline.TrackSpan(runs: [(s(5), s(10)), (s(30), s(65))], firstDecode: s(5))
        let edits = SessionTimeline.edits(sessions: sessions, origin: s(100), track: track)
        #expect(edits == [SessionTimeline.Edit(duration: s(5), mediaStart: nil),
                          SessionTimeline.Edit(duration: s(5), mediaStart: s(0)),
                          SessionTimeline.Edit(duration: s(10), mediaStart: s(25)),
                          SessionTimeline.Edit(duration: s(15), mediaStart: s(45))])
        // Media that starts late in the second session (0.2 s after its
        // start) holds the media before it rather than opening with an empty
        // edit; a session with no media at all stays an empty edit.
        let late = SessionTimeline.TrackSpan(runs: [(s(0), s(10)), (s(32), s(40)), (s(50), s(65))], firstDecode: .zero)
        #expect(SessionTimeline.edits(sessions: sessions, origin: s(100), track: late)
                == [SessionTimeline.Edit(duration: s(12), mediaStart: s(0)), SessionTimeline.Edit(duration: s(8), mediaStart: s(32)),
                    SessionTimeline.Edit(duration: s(15), mediaStart: s(50))])
        let absent = SessionTimeline.TrackSpan(runs: [(s(0), s(10)), (s(52), s(65))], firstDecode: .zero)
        #expect(SessionTimeline.edits(sessions: sessions, origin: s(100), track: absent)
                == [SessionTimeline.Edit(duration: s(10), mediaStart: s(0)), SessionTimeline.Edit(duration: s(12), mediaStart: nil),
                    SessionTimeline.Edit(duration: s(13), mediaStart: s(52))])
        // Video whose last frames before each pause were lost (its media ends 0.2 s
        // and 0.3 s before the first and second sessions do) holds its last frame to
        // each session's end: no empty edit between the media. Before, GStreamer and
        // mkvmerge read such a track shorter than the file by what was lost.
        let lostBeforeThePauses = SessionTimeline.TrackSpan(runs: [(s(0), s(8)), (s(30), s(37)), (s(50), s(65))], firstDecode: .zero,
                                                            bridgesGaps: true)
        #expect(SessionTimeline.edits(sessions: sessions, origin: s(100), track: lostBeforeThePauses)
                == [SessionTimeline.Edit(duration: s(10), mediaStart: s(0)), SessionTimeline.Edit(duration: s(10), mediaStart: s(30)),
                    SessionTimeline.Edit(duration: s(15), mediaStart: s(50))])
        // At the end of the last session it does not: the writer holds the last frame there itself.
        let lostAtTheEnd = SessionTimeline.TrackSpan(runs: [(s(0), s(10)), (s(30), s(40)), (s(50), s(60))], firstDecode: .zero, bridgesGaps: true)
        #expect(SessionTimeline.edits(sessions: sessions, origin: s(100), track: lostAtTheEnd)
                == [SessionTimeline.Edit(duration: s(10), mediaStart: s(0)), SessionTimeline.Edit(duration: s(10), mediaStart: s(30)),
                    SessionTimeline.Edit(duration: s(10), mediaStart: s(50))])
        // Rounded on the running total: three thirds of a second at 1000 units.
        let thirds = Array(repeating: SessionTimeline.Edit(duration: MediaTime(value: 1, timescale: 3), mediaStart: .zero), count: 3)
        #expect(SessionTimeline.rounded(thirds, movieTimescale: 1000, mediaTimescale: 90000).map(\.duration) == [333, 334, 333])
    }

    @Test func movieBoxesRoundTripAndChunkOffsetsWiden() throws {
        var stco = ChunkOffsets.payload32([8, 4_000_000_000])
        var movie = MovieBox(type: "moov", children: [
            MovieBox(type: "trak", children: [MovieBox(type: "mdia", children: [MovieBox(type: "minf", children: [
                MovieBox(type: "stbl", children: [MovieBox(type: "stco", payload: stco)])])])])])
        let bytes = movie.serialized()
        #expect(try MovieBox.parseList(bytes[...]) == [movie])
        try MoviePatcher.shiftChunkOffsets(&movie, by: 500_000_000)
        let table = try #require(movie.find("trak", "mdia", "minf", "stbl", "co64"))
        #expect(ChunkOffsets.read64(table.payload) == [500_000_008, 4_500_000_000])
        stco = EditList.payload([EditEntry(duration: 10, mediaTime: nil), EditEntry(duration: 1 << 33, mediaTime: 5)])
        #expect(EditList.entries(stco) == [EditEntry(duration: 10, mediaTime: nil), EditEntry(duration: 1 << 33, mediaTime: 5)])
        #expect(throws: WriterError.self) { try MovieBox.parseList([0, 0, 0, 99, 0x6d, 0x6f, 0x6f, 0x76][...]) }
    }
}

/// A flag set from another thread.
final class NotificationFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
