import Foundation
import Testing
@testable import CaptureKit

/// Writes synthetic frames and samples through AssetWriter and reads the
/// files back with ffprobe.
@Suite struct WriterTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    /// A writer with one H.264 input for 320x240 frames.
    static func h264Writer(_ path: String, keyframeInterval: Int = 10, configure: (AssetWriter) -> Void = { _ in }) throws -> (AssetWriter, AssetWriterInput) {
        let writer = try AssetWriter(outputPath: path)
        configure(writer)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 320, height: 240, quality: 23, preset: "ultrafast", maxKeyFrameInterval: keyframeInterval,
            expectedFrameDuration: frameDuration)))
        try writer.add(input)
        return (writer, input)
    }

    static func appendFrames(_ input: AssetWriterInput, _ numbers: Range<Int>, start: MediaTime = .zero) throws {
        for number in numbers {
            try input.append(NumberedFrames.make(number), presentationTime: start + frameDuration * Int64(number))
        }
    }

    @Test func h264InMP4HasEveryFrameAtItsTimeWithKeyframesWhereAsked() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("clip.mp4")
        let (writer, input) = try Self.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendFrames(input, 0..<30)
        try writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(input.encoderName == "libx264")

        let frames = try FFprobe.frames(path)
        #expect(frames.count == 30)
        for (index, frame) in frames.enumerated() {
            #expect(abs(frame.time - Double(index) / 30) < 1e-6, "frame \(index) at \(frame.time)")
        }
        #expect(frames.enumerated().filter { $0.element.key }.map(\.offset) == [0, 10, 20])
        let format = try FFprobe.format(path)
        #expect(Double(format["duration"] as? String ?? "") == 1.0)
    }

    @Test func sessionsFollowEachOtherInTheMediaWithoutAnEditForThePause() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("sessions.mp4")
        // Default x264 settings: B-frames, so decode and presentation times differ.
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 320, height: 240, quality: 23, maxKeyFrameInterval: 15, expectedFrameDuration: Self.frameDuration)))
        try writer.add(input)
        writer.movieTimeScale = 600
        try writer.startWriting()
        // Session one: source 10 s … 11 s; frames 300..329.
        try writer.startSession(atSourceTime: seconds(10, 1))
        try Self.appendFrames(input, 300..<330)
        try writer.endSession(atSourceTime: seconds(11, 1))
        // Frames between sessions are left out.
        try Self.appendFrames(input, 330..<345)
        // Session two: source 12 s … 12.5 s, frames 360..374, then frames after its end.
        try writer.startSession(atSourceTime: seconds(12, 1))
        try Self.appendFrames(input, 360..<390)
        try writer.endSession(atSourceTime: seconds(25, 2))
        try writer.finishWriting()

        let structure = try #require(try MovieStructure.read(path: path))
        #expect(structure.movieTimescale == 600)
        #expect(structure.movieDuration == seconds(3, 2))
        let track = try #require(structure.tracks.first)
        // One edit: the second session's media follows the first's.
        #expect(track.edits.map(\.duration) == [seconds(3, 2)])
        #expect(try mediaRunsOn(path))
        // The media alone (no edit list applied) holds the 45 frames, and
        // after them the 15 frames appended past the end the last session
        // was given, which the edit leaves out as AVAssetWriter's does.
        let packets = try FFprobe.json(["-select_streams", "v", "-ignore_editlist", "1", "-show_entries", "packet=pts_time,flags", path])["packets"] as? [[String: Any]] ?? []
        #expect(packets.count == 60)

        // Played back: frames 300..329 at 0…1 s, then 360..374 at 1…1.5 s.
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 45)
        for (index, frame) in frames.enumerated() {
            #expect(abs(frame.time - Double(index) / 30) < 1e-3, "frame \(index) at \(frame.time)")
        }
        let format = try FFprobe.format(path)
        #expect(Double(format["duration"] as? String ?? "") == 1.5)
        // The library reads the same frames back, by number.
        let item = try PlayerItem(path: path)
        let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
        for (time, number) in [(0.0, 300), (0.5, 315), (29.0 / 30, 329), (1.0, 360), (1.49, 374)] {
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: time, preferredTimescale: 90000)))
            #expect(NumberedFrames.read(buffer) == number, "at \(time) s")
        }
    }

    @Test func anEmptySessionHoldsThePictureBeforeIt() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("gap.mov")
        let (writer, input) = try Self.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendFrames(input, 0..<15)
        try writer.endSession(atSourceTime: seconds(1, 2))
        try writer.startSession(atSourceTime: seconds(1, 1))
        try writer.endSession(atSourceTime: seconds(2, 1))
        try writer.startSession(atSourceTime: seconds(3, 1))
        try Self.appendFrames(input, 90..<105)
        try writer.finishWriting()
        let track = try #require(try MovieStructure.read(path: path)?.tracks.first)
        // 0.5 s, then a second with no frame of its own, then 0.5 s: one
        // edit, the last frame of the first session shown through the second.
        #expect(track.edits.map(\.duration) == [seconds(2, 1)])
        let packets = try FFprobe.json(["-select_streams", "v", "-ignore_editlist", "1", "-show_entries", "packet=pts_time", path])["packets"] as? [[String: Any]] ?? []
        #expect(packets.count == 30)
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: .gray8)
        for (time, number) in [(0.2, 6), (1.0, 14), (1.49, 14), (1.5, 90)] {
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: time, preferredTimescale: 90000)))
            #expect(NumberedFrames.read(buffer) == number, "at \(time) s")
        }
    }

    @Test func aLateTrackStartsWithAnEmptyEdit() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("late.mp4")
        let (writer, input) = try Self.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendFrames(input, 15..<30)
        try writer.finishWriting()
        let track = try #require(try MovieStructure.read(path: path)?.tracks.first)
        #expect(track.edits.map(\.duration) == [seconds(1, 2), seconds(1, 2)])
        #expect(track.edits.first?.mediaTime == nil)
        let frames = try FFprobe.frames(path)
        #expect(abs((frames.first?.time ?? 0) - 0.5) < 1e-3)
    }

    @Test(arguments: [FileType.matroska, .mpegTS])
    func containersWithoutEditListsRestampSessions(fileType: FileType) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("sessions.\(fileType.rawValue)")
        let (writer, input) = try Self.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: seconds(5, 1))
        try Self.appendFrames(input, 150..<180)
        try writer.endSession(atSourceTime: seconds(6, 1))
        try Self.appendFrames(input, 180..<195) // outside: left out
        try writer.startSession(atSourceTime: seconds(7, 1))
        try Self.appendFrames(input, 210..<240)
        try writer.finishWriting()
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 60)
        let start = frames.first?.time ?? 0
        for (index, frame) in frames.enumerated() {
            // Matroska stores milliseconds.
            #expect(abs(frame.time - start - Double(index) / 30) < 2e-3, "frame \(index) at \(frame.time)")
        }
        let item = try PlayerItem(path: path)
        let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
        let first = try #require(try output.copyPixelBuffer(forItemTime: .zero))
        #expect(NumberedFrames.read(first) == 150)
        let later = try #require(try output.copyPixelBuffer(forItemTime: seconds(1, 1)))
        #expect(NumberedFrames.read(later) == 210)
    }

    /// A pause just after one frame and a resume just before another put
    /// the two 0.2 ms apart in the file: less than a tick of Matroska's
    /// millisecond time base, where they must still not share a decode time.
    @Test(arguments: [FileType.matroska, .mp4])
    func framesAPauseBringsWithinATickStayInOrder(fileType: FileType) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("close.\(fileType.rawValue)")
        let (writer, input) = try Self.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendFrames(input, 0..<10)
        let tenth = MediaTime(value: 1, timescale: 10000)
        try writer.endSession(atSourceTime: Self.frameDuration * 9 + tenth)
        try writer.startSession(atSourceTime: Self.frameDuration * 15 - tenth)
        try Self.appendFrames(input, 15..<25)
        try writer.finishWriting()
        let packets = try FFprobe.json(["-select_streams", "v", "-show_entries", "packet=dts", path])["packets"] as? [[String: Any]] ?? []
        let decodeTimes = packets.compactMap { $0["dts"] as? Int }
        #expect(decodeTimes.count == 20)
        #expect(zip(decodeTimes.dropFirst(), decodeTimes).allSatisfy { $0 > $1 }, "decode times \(decodeTimes)")
        #expect(try FFprobe.frames(path).count == 20)
    }

    @Test func neverOverwritesOrFollowsLinks() throws {
        let scratch = try WriterScratchDirectory()
        let existing = scratch.file("existing.mp4")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing))
        #expect(throws: WriterError.outputExists(path: existing)) { try AssetWriter(outputPath: existing) }
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me")

        let link = scratch.file("link.mp4")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: existing)
        #expect(throws: WriterError.outputExists(path: link)) { try AssetWriter(outputPath: link) }
        let dangling = scratch.file("dangling.mp4")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: scratch.file("nowhere.mp4"))
        #expect(throws: WriterError.outputExists(path: dangling)) { try AssetWriter(outputPath: dangling) }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("nowhere.mp4")))
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me")

        let missing = scratch.file("no/such/dir/out.mp4")
        #expect(throws: WriterError.directoryMissing(path: missing)) { try AssetWriter(outputPath: missing) }
        #expect(throws: WriterError.self) { try AssetWriter(outputPath: scratch.file("noextension")) }
    }

    @Test func cancelRemovesThePartialFile() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("cancelled.mp4")
        let (writer, input) = try Self.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendFrames(input, 0..<10)
        #expect(FileManager.default.fileExists(atPath: path))
        writer.cancelWriting()
        #expect(writer.status == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(throws: WriterError.self) { try input.append(NumberedFrames.make(11), presentationTime: seconds(1, 1)) }
        #expect(throws: WriterError.self) { try writer.finishWriting() }
    }

    @Test func cancelLeavesAFileSomeoneElsePutThereAlone() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("replaced.mp4")
        let (writer, _) = try Self.h264Writer(path)
        try writer.startWriting()
        try FileManager.default.removeItem(atPath: path)
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: path))
        writer.cancelWriting()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "theirs")
    }

    @Test func aWriterThatNeverStartsLeavesNothing() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("unused.mp4")
        do {
            let writer = try AssetWriter(outputPath: path)
            #expect(writer.status == .unknown)
            #expect(FileManager.default.fileExists(atPath: path))
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func statusMachineRefusesCallsOutOfOrder() throws {
        let scratch = try WriterScratchDirectory()
        let (writer, input) = try Self.h264Writer(scratch.file("order.mp4"))
        // Appending before writing, before a session.
        #expect(throws: WriterError.self) { try input.append(NumberedFrames.make(0), presentationTime: .zero) }
        #expect(throws: WriterError.self) { try writer.startSession(atSourceTime: .zero) }
        try writer.startWriting()
        #expect(writer.status == .writing)
        #expect(throws: WriterError.self) { try writer.startWriting() }
        #expect(throws: WriterError.self) { try input.append(NumberedFrames.make(0), presentationTime: .zero) }
        #expect(throws: WriterError.self) { try writer.endSession(atSourceTime: .zero) }
        let late = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2)))
        #expect(!writer.canAdd(late))
        #expect(throws: WriterError.self) { try writer.add(late) }
        try writer.startSession(atSourceTime: .zero)
        #expect(throws: WriterError.self) { try writer.startSession(atSourceTime: .zero) }
        try input.append(NumberedFrames.make(0), presentationTime: .zero)
        // Times must increase.
        #expect(throws: WriterError.self) { try input.append(NumberedFrames.make(1), presentationTime: .zero) }
        #expect(writer.status == .writing)
        try writer.endSession(atSourceTime: seconds(1, 1))
        #expect(throws: WriterError.self) { try writer.startSession(atSourceTime: seconds(1, 2)) }
        #expect(writer.status == .writing, "\(String(describing: writer.error))")
        try writer.finishWriting()
        #expect(writer.status == .completed)
        try writer.finishWriting() // again: nothing to do
        writer.cancelWriting()     // after completion: nothing to do
        #expect(writer.status == .completed)
        #expect(FileManager.default.fileExists(atPath: writer.outputPath))
    }

    @Test func canApplyAnswersFromTheContainer() throws {
        let scratch = try WriterScratchDirectory()
        func writer(_ name: String) throws -> AssetWriter { try AssetWriter(outputPath: scratch.file(name)) }
        let h264 = OutputSettings.video(VideoOutputSettings(codec: .h264, width: 64, height: 64))
        let vp9 = OutputSettings.video(VideoOutputSettings(codec: .vp9, width: 64, height: 64))
        let pcm = OutputSettings.audio(AudioOutputSettings(codec: .pcm(.s16), sampleRate: 48000, channels: 2))
        let opus = OutputSettings.audio(AudioOutputSettings(codec: .opus, sampleRate: 48000, channels: 2))
        let aac = OutputSettings.audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2))
        let mp4 = try writer("a.mp4"), webm = try writer("a.webm"), mkv = try writer("a.mkv"), wav = try writer("a.wav")
        let ts = try writer("a.ts"), ogg = try writer("a.ogg"), mov = try writer("a.mov")
        #expect(mp4.canApply(outputSettings: h264, forMediaType: .video))
        #expect(!mp4.canApply(outputSettings: pcm, forMediaType: .audio))
        #expect(mov.canApply(outputSettings: pcm, forMediaType: .audio))
        #expect(!mp4.canApply(outputSettings: h264, forMediaType: .audio))
        #expect(!webm.canApply(outputSettings: h264, forMediaType: .video))
        #expect(webm.canApply(outputSettings: vp9, forMediaType: .video))
        #expect(webm.canApply(outputSettings: opus, forMediaType: .audio))
        #expect(!webm.canApply(outputSettings: aac, forMediaType: .audio))
        #expect(mkv.canApply(outputSettings: pcm, forMediaType: .audio))
        #expect(!wav.canApply(outputSettings: h264, forMediaType: .video))
        #expect(wav.canApply(outputSettings: pcm, forMediaType: .audio))
        #expect(ts.canApply(outputSettings: h264, forMediaType: .video))
        #expect(!ts.canApply(outputSettings: vp9, forMediaType: .video))
        #expect(ogg.canApply(outputSettings: opus, forMediaType: .audio))
        #expect(!ogg.canApply(outputSettings: aac, forMediaType: .audio))
        let input = AssetWriterInput(outputSettings: h264)
        #expect(!webm.canAdd(input))
        #expect(throws: WriterError.codecNotAllowed(codec: "h264", fileType: .webm)) { try webm.add(input) }
        #expect(mp4.canAdd(input))
    }

    @Test func badSettingsFailStartWritingAndRemoveTheFile() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("bad.mp4")
        let writer = try AssetWriter(outputPath: path)
        try writer.add(AssetWriterInput(outputSettings: .video(VideoOutputSettings(codec: .h264, width: 320, height: 240, preset: "warp-speed"))))
        #expect(throws: WriterError.self) { try writer.startWriting() }
        #expect(writer.status == .failed)
        #expect(writer.error != nil)
        #expect(!FileManager.default.fileExists(atPath: path))

        let other = try AssetWriter(outputPath: scratch.file("bad.m4a"))
        try other.add(AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2,
                                                                                   encoderOptions: ["no_such_option": "1"]))))
        #expect(throws: WriterError.self) { try other.startWriting() }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("bad.m4a")))

        let opus = try AssetWriter(outputPath: scratch.file("rate.opus"))
        try opus.add(AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .opus, sampleRate: 44100, channels: 2))))
        do {
            try opus.startWriting()
            Issue.record("Opus at 44.1 kHz should be refused")
        } catch {
            #expect(error.description.contains("48000"))
        }
    }

    @Test func rawFramesInAnyFormatAreConvertedIntoOneReusedBuffer() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("formats.mkv")
        let (writer, input) = try Self.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let formats: [PixelFormat] = [.rgb24, .bgra, .nv12, .yuyv422, .gray8]
        for number in 0..<40 {
            let format = formats[number % formats.count]
            let frame = try NumberedFrames.make(number, format: format)
            try input.append(frame, presentationTime: Self.frameDuration * Int64(number))
        }
        // Memory the caller owns: packed YUYV with padded rows.
        let yuyv = try NumberedFrames.make(40, format: .yuyv422)
        let stride = yuyv.bytesPerRow(plane: 0)
        try yuyv.withUnsafeBytes(plane: 0) { bytes in
            try input.appendPixels(bytes, format: .yuyv422, width: 320, height: 240, bytesPerRow: stride,
                                   presentationTime: Self.frameDuration * 40)
        }
        #expect(input.conversionBufferAllocations == 1)
        var tooSmall = [UInt8](repeating: 0, count: 100)
        #expect(throws: WriterError.self) {
            try tooSmall.withUnsafeMutableBytes { try input.appendPixels(UnsafeRawBufferPointer($0), format: .rgb24, width: 320, height: 240, presentationTime: seconds(10, 1)) }
        }
        #expect(writer.status == .writing)
        try writer.finishWriting()
        let item = try PlayerItem(path: path)
        let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
        for number in [0, 1, 2, 3, 4, 17, 40] {
            // Matroska keeps milliseconds: ask for the middle of each frame.
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: (Double(number) + 0.5) / 30, preferredTimescale: 90000)))
            #expect(NumberedFrames.read(buffer) == number)
        }
    }
}
