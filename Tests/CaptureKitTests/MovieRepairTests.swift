import Foundation
import Testing
@testable import CaptureKit

/// `MovieRepair`: fragmented recordings that never finished, made regular in
/// place; and the files it refuses, with the reason.
@Suite struct MovieRepairTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    /// A recording in fragments of half a second, as a killed process
    /// leaves it: frames 0..<45 (0–1.5 s), a pause in which frames 45..<60
    /// still come, frames 60..<`last` from 2 s on. Answers the unfinished
    /// file's path; the writer's own file is finished (regular).
    static func killedRecording(_ scratch: WriterScratchDirectory, last: Int = 120, pause: Bool = true) throws -> (killed: String, finished: String) {
        let path = scratch.file("recording.mp4")
        let (writer, video, audio) = try HybridMovieTests.writer(path, fragments: MediaTime(value: 1, timescale: 2))
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<last {
            if pause && number == 45 { try writer.endSession(atSourceTime: MediaTime(value: 3, timescale: 2)) }
            if pause && number == 60 { try writer.startSession(atSourceTime: MediaTime(value: 2, timescale: 1)) }
            try video.append(NumberedFrames.make(number), presentationTime: frameDuration * Int64(number))
            let samples = Tone.samples(count: 1600, channels: 2, rate: 48000, start: number * 1600)
            try samples.withUnsafeBytes {
                try audio.appendAudio($0, format: .s16, channels: 2, sampleRate: 48000,
                                      presentationTime: MediaTime(value: Int64(number) * 1600, timescale: 48000))
            }
        }
        let killed = scratch.file("killed.mp4")
        try FileManager.default.copyItem(atPath: path, toPath: killed)
        try writer.finishWriting()
        return (killed, path)
    }

    static func frameNumber(_ path: String, at seconds: Double) throws -> Int? {
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: .gray8)
        return try output.copyPixelBuffer(forItemTime: MediaTime(seconds: seconds, preferredTimescale: 90000)).map(NumberedFrames.read)
    }

    @Test func aKilledRecordingBecomesRegularWithItsPausesLeftOut() throws {
        let scratch = try WriterScratchDirectory()
        let (killed, finished) = try Self.killedRecording(scratch)
        let before = try #require(try MovieStructure.read(path: killed))
        #expect(before.isFragmented && !before.isFinished)
        let framesBefore = try FFprobe.frames(killed).count
        #expect(framesBefore >= 60)

        let result = try MovieRepair.repair(path: killed)
        #expect(result.outcome == .repaired)
        #expect(result.sessions == 2)
        #expect(result.fragments == before.fragmentCount)
        #expect(result.droppedBytes == 0)
        #expect(result.tracks.map(\.mediaType) == ["video", "audio"])
        #expect(try Boxes.topLevel(killed).map(\.type) == ["ftyp", "free", "mdat", "moov"])

        let after = try #require(try MovieStructure.read(path: killed))
        #expect(!after.isFragmented && after.isFinished)
        // The pause is out of the media, as in the file the clean finish
        // made: one edit a track, starting where the finished file's does.
        let reference = try #require(try MovieStructure.read(path: finished))
        #expect(after.tracks.map(\.edits.count) == [1, 1])
        #expect(after.tracks.map { $0.edits.first?.mediaTime } == reference.tracks.map { $0.edits.first?.mediaTime })
        #expect(try mediaRunsOn(killed), "no gap and no step back in the media")
        // Every frame the fragments had, played without the pause.
        let frames = try FFprobe.frames(killed)
        #expect(result.tracks[0].samples == framesBefore)
        #expect(frames.count == framesBefore)
        for (index, frame) in frames.enumerated() { #expect(abs(frame.time - Double(index) / 30) < 1e-3, "frame \(index) at \(frame.time)") }
        #expect(try Self.frameNumber(killed, at: 1.0) == 30)
        #expect(try Self.frameNumber(killed, at: 1.6) == 63)
        #expect(try decodesCleanly(killed))
        let piped = try probeFromPipe(killed)
        let duration = Double((piped["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0
        #expect(abs(duration - result.duration.seconds) < 1e-3)

        // Once regular, there is nothing more to do, and nothing changes.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: killed))
        #expect(try MovieRepair.repair(path: killed).outcome == .alreadyRegular)
        #expect(try Data(contentsOf: URL(fileURLWithPath: killed)) == bytes)
    }

    /// Cut at any byte: the samples of every complete fragment, and of the
    /// cut one those whose bytes are all there; the rest is cut off.
    @Test func aFileCutAnywhereIsRepairedUpToItsLastWholeSample() throws {
        let scratch = try WriterScratchDirectory()
        let (killed, _) = try Self.killedRecording(scratch, last: 90, pause: false)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: killed)))
        let top = Boxes.list(bytes, in: 0..<bytes.count)
        let firstMoof = try #require(top.first { $0.type == "moof" }).offset
        // Frames readable in the file cut after each complete fragment.
        var framesAt = [Int: Int]()
        for box in top where box.type == "mdat" {
            let path = scratch.file("end-\(box.offset).mp4")
            try Data(bytes.prefix(box.offset + box.size)).write(to: URL(fileURLWithPath: path))
            framesAt[box.offset + box.size] = try FFprobe.frames(path).count
        }
        let step = max(1, (bytes.count - firstMoof) / 24)
        for cut in stride(from: firstMoof - 100, to: bytes.count, by: step) + [bytes.count - 1, bytes.count] {
            let path = scratch.file("cut-\(cut).mp4")
            try Data(bytes.prefix(cut)).write(to: URL(fileURLWithPath: path))
            let complete = framesAt.filter { $0.key <= cut }.max { $0.key < $1.key }?.value ?? 0
            switch Self.attempt(path) {
            case .success(let result):
                #expect(result.outcome == .repaired)
                let repaired = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
                // The media is where it was.
                let mediaEnd = Int(result.fileSize) - result.indexBytes
                #expect(Array(repaired[firstMoof..<mediaEnd]) == Array(bytes[firstMoof..<mediaEnd]), "cut at \(cut)")
                #expect(result.droppedBytes == Int64(cut - mediaEnd))
                #expect(try decodesCleanly(path), "cut at \(cut)")
                let frames = try FFprobe.frames(path).count
                #expect(frames >= complete && frames >= 1 && frames == result.tracks[0].samples, "cut at \(cut): \(frames) frames, \(complete) in complete fragments")
            case .failure(let error):
                // Only a file without one complete fragment has nothing to rebuild from.
                #expect(complete == 0, "cut at \(cut): \(error)")
                guard case .cannotRepair = error else { Issue.record("cut at \(cut): \(error)"); continue }
            }
        }
    }

    static func attempt(_ path: String) -> Result<MovieRepair.Result, MovieRepairError> {
        do throws(MovieRepairError) { return .success(try MovieRepair.repair(path: path)) } catch { return .failure(error) }
    }

    /// A clean finish that stopped half way (the index not wholly written
    /// after the fragments, or written but the head not yet changed) left a
    /// file that reads as fragments; repair finishes the job.
    @Test(arguments: [false, true])
    func aFinishThatStoppedHalfWayIsRepaired(wholeIndex: Bool) throws {
        let scratch = try WriterScratchDirectory()
        let (killed, finished) = try Self.killedRecording(scratch, last: 60, pause: false)
        // The index the finish writes, after the fragments.
        let regular = try [UInt8](Data(contentsOf: URL(fileURLWithPath: finished)))
        let moov = try #require(Boxes.list(regular, in: 0..<regular.count).last { $0.type == "moov" })
        let index = Array(regular[moov.offset..<(moov.offset + (wholeIndex ? moov.size : moov.size / 2))])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: killed))
        try handle.seekToEnd()
        try handle.write(contentsOf: index)
        try handle.close()
        let structure = try #require(try MovieStructure.read(path: killed))
        #expect(structure.isFragmented && !structure.isFinished)
        let frames = try FFprobe.frames(killed).count
        #expect(frames >= 30)
        let result = try MovieRepair.repair(path: killed)
        #expect(result.droppedBytes == Int64(index.count))
        #expect(try FFprobe.frames(killed).count == frames)
        #expect(try MovieStructure.read(path: killed)?.isFinished == true)
        #expect(try decodesCleanly(killed))
    }

    /// Media past 4 GiB: 64-bit chunk offsets ('co64') and a 64-bit media
    /// data size. Built by putting 4.5 GiB of nothing (a sparse 'free' box)
    /// between the first fragment and the second (fragments count their
    /// data offsets from their own 'moof').
    @Test func mediaPast4GiBGets64BitOffsetsAndSize() throws {
        let scratch = try WriterScratchDirectory()
        let (killed, _) = try Self.killedRecording(scratch, last: 60, pause: false)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: killed)))
        let top = Boxes.list(bytes, in: 0..<bytes.count)
        let firstMoof = try #require(top.first { $0.type == "moof" }).offset
        let firstMdat = try #require(top.first { $0.type == "mdat" })
        let split = firstMdat.offset + firstMdat.size
        let gap = (1 << 32) + (1 << 29)
        let path = scratch.file("large.mp4")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes.prefix(split))))
        var header = [UInt8](repeating: 0, count: 16)
        header[3] = 1
        header.replaceSubrange(4..<8, with: Array("free".utf8))
        for byte in 0..<8 { header[8 + byte] = UInt8(truncatingIfNeeded: gap >> (56 - 8 * byte)) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(split))
        try handle.write(contentsOf: header)
        try handle.seek(toOffset: UInt64(split + gap))
        try handle.write(contentsOf: bytes[split...])
        try handle.close()
        let framesBefore = try FFprobe.frames(killed).count
        #expect(try FFprobe.frames(path).count == framesBefore)

        let result = try MovieRepair.repair(path: path)
        #expect(result.outcome == .repaired)
        let after = try Boxes.topLevel(path)
        #expect(after.map(\.type) == ["ftyp", "free", "mdat", "moov"])
        let mdat = after[2]
        #expect(mdat.headerSize == 16 && mdat.offset == firstMoof - 16)
        #expect(mdat.size > 1 << 32)
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        try file.seek(toOffset: UInt64(after[3].offset))
        let moov = [UInt8](try file.readToEnd() ?? Data())
        try file.close()
        let co64 = Boxes.find(moov, ["moov", "trak", "mdia", "minf", "stbl", "co64"])
        #expect(co64.count == 2)
        #expect(Boxes.find(moov, ["moov", "trak", "mdia", "minf", "stbl", "stco"]).isEmpty)
        let chunks = Boxes.uint32(moov, co64[0].body.lowerBound + 4)
        #expect(Boxes.uint64(moov, co64[0].body.lowerBound + 8) < 1 << 32)
        #expect(Boxes.uint64(moov, co64[0].body.lowerBound + 8 * chunks) > 1 << 32)
        #expect(try FFprobe.frames(path).count == framesBefore)
        #expect(try HybridMovieTests.frameNumberAt(path, seconds: 1.0) == 30)
        #expect(try HybridMovieTests.frameNumberAt(path, seconds: 0.2) == 6)
    }

    /// A fragmented file another program wrote (ffmpeg, base data offsets
    /// in each fragment, no session log): each track keeps its start.
    @Test(arguments: ["frag_keyframe+empty_moov", "frag_keyframe+empty_moov+default_base_moof"])
    func aFragmentedFileFromFFmpegIsRepaired(flags: String) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("ffmpeg.mp4")
        let made = try FFprobe.runTool("ffmpeg", ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25",
                                                  "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", "3",
                                                  "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-c:a", "aac",
                                                  "-movflags", flags, path])
        try #require(made == 0)
        let frames = try FFprobe.frames(path)
        let duration = Double(try FFprobe.format(path)["duration"] as? String ?? "") ?? 0
        let result = try MovieRepair.repair(path: path)
        #expect(result.sessions == nil)
        #expect(result.tracks.map(\.samples).first == frames.count)
        #expect(abs(result.duration.seconds - duration) < 0.05, "\(result.duration.seconds) s, was \(duration) s")
        let repaired = try FFprobe.frames(path)
        #expect(repaired.count == frames.count)
        #expect(abs((repaired.first?.time ?? -1) - (frames.first?.time ?? 0)) < 1e-3)
        #expect(try decodesCleanly(path))
        #expect(try Boxes.topLevel(path).map(\.type) == ["ftyp", "free", "mdat", "moov"])
    }

    @Test func filesItCannotRepairAreRefusedWithTheReason() throws {
        let scratch = try WriterScratchDirectory()
        #expect(throws: MovieRepairError.noSuchFile(path: scratch.file("none.mp4"))) { try MovieRepair.repair(path: scratch.file("none.mp4")) }
        #expect(throws: MovieRepairError.notAFile(path: scratch.path)) { try MovieRepair.repair(path: scratch.path) }
        let text = scratch.file("notes.mp4")
        try "not a movie at all".write(toFile: text, atomically: false, encoding: .utf8)
        if case .failure(let error) = Self.attempt(text) {
            guard case .notAMovie = error else { Issue.record("\(error)"); return }
        } else {
            Issue.record("a text file was repaired")
        }

        // Written in one piece and cut off before its index: nothing says where the samples are.
        let classic = scratch.file("classic.mp4")
        let writer = try AssetWriter(outputPath: classic)
        let video = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 320, height: 240, quality: 28, preset: "ultrafast", expectedFrameDuration: Self.frameDuration)))
        try writer.add(video)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<30 { try video.append(NumberedFrames.make(number), presentationTime: Self.frameDuration * Int64(number)) }
        let cut = scratch.file("classic-cut.mp4")
        try FileManager.default.copyItem(atPath: classic, toPath: cut)
        try writer.finishWriting()
        if case .failure(let error) = Self.attempt(cut) {
            guard case .cannotRepair(_, let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("one piece"))
        } else {
            Issue.record("a file without index was repaired")
        }
        // A regular file is left as it is.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: classic))
        let result = try MovieRepair.repair(path: classic)
        #expect(result.outcome == .alreadyRegular)
        #expect(result.tracks.first?.samples == 30)
        #expect(try Data(contentsOf: URL(fileURLWithPath: classic)) == bytes)

        // Fragmented, but stopped before its first fragment was complete.
        let (killed, _) = try Self.killedRecording(scratch, last: 30, pause: false)
        let head = try [UInt8](Data(contentsOf: URL(fileURLWithPath: killed)))
        let firstMoof = try #require(Boxes.list(head, in: 0..<head.count).first { $0.type == "moof" })
        let early = scratch.file("early.mp4")
        try Data(head.prefix(firstMoof.offset + firstMoof.size / 2)).write(to: URL(fileURLWithPath: early))
        if case .failure(let error) = Self.attempt(early) {
            guard case .cannotRepair(_, let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("no fragment"))
        } else {
            Issue.record("a file without a fragment was repaired")
        }
    }

    /// A file a writer is still writing is not touched.
    @Test func aFileBeingWrittenIsRefused() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("live.mp4")
        let (writer, video, _) = try HybridMovieTests.writer(path, fragments: MediaTime(value: 1, timescale: 2))
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<45 { try video.append(NumberedFrames.make(number), presentationTime: Self.frameDuration * Int64(number)) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: MovieRepairError.inUse(path: path)) { try MovieRepair.repair(path: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        try writer.finishWriting()
        #expect(try Self.repairOnceUnlocked(path).outcome == .alreadyRegular)
    }

    /// Repairs `path`, waiting (up to 10 s) while it is found in use: a process
    /// that another test spawns just then holds a copy of the writer's
    /// descriptor, and its lock, until it execs (O_CLOEXEC closes it there),
    /// which on a busy machine can come long after the writer has closed its own.
    static func repairOnceUnlocked(_ path: String) throws -> MovieRepair.Result {
        let deadline = MonotonicClock.nowNanoseconds() + 10_000_000_000
        while true {
            do {
                return try MovieRepair.repair(path: path)
            } catch {
                guard error == .inUse(path: path), MonotonicClock.nowNanoseconds() < deadline else { throw error }
                usleep(10_000)
            }
        }
    }
}

extension HybridMovieTests {
    /// The number of the frame the library shows at `seconds`.
    static func frameNumberAt(_ path: String, seconds: Double) throws -> Int? {
        try MovieRepairTests.frameNumber(path, at: seconds)
    }
}

extension FFprobe {
    /// Runs another tool (ffmpeg) and answers its exit status.
    static func runTool(_ name: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [name] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
