import Foundation
import Testing
@testable import CaptureKit

/// Boxes of an ISO base media file as the tests read them, with a reader of
/// their own (not the library's): top-level boxes, and children by path.
enum Boxes {
    struct Box {
        var type: String
        var offset: Int
        var size: Int
        var headerSize: Int
        var body: Range<Int> { (offset + headerSize)..<(offset + size) }
    }

    static func list(_ bytes: [UInt8], in range: Range<Int>) -> [Box] {
        var boxes = [Box]()
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            var size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            var header = 8
            if size == 1 {
                size = (0..<8).reduce(0) { $0 << 8 | Int(bytes[offset + 8 + $1]) }
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header else { break }
            boxes.append(Box(type: type, offset: offset, size: size, headerSize: header))
            offset += size
        }
        return boxes
    }

    /// The top-level boxes, reading only their headers (files may be large and sparse).
    static func topLevel(_ path: String) throws -> [Box] {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let end = Int(try handle.seekToEnd())
        var boxes = [Box]()
        var offset = 0
        while offset + 8 <= end {
            try handle.seek(toOffset: UInt64(offset))
            let header = [UInt8](try handle.read(upToCount: 16) ?? Data())
            guard header.count >= 8 else { break }
            var size = uint32(header, 0)
            var headerSize = 8
            if size == 1, header.count == 16 { size = uint64(header, 8); headerSize = 16 } else if size == 0 { size = end - offset }
            guard size >= headerSize else { break }
            boxes.append(Box(type: String(decoding: header[4..<8], as: UTF8.self), offset: offset, size: size, headerSize: headerSize))
            offset += size
        }
        return boxes
    }

    /// Every box at the end of `path` (such as ["moov", "trak", "mdia", "minf", "stbl", "stsz"]).
    static func find(_ bytes: [UInt8], _ path: [String], in range: Range<Int>? = nil) -> [Box] {
        let boxes = list(bytes, in: range ?? 0..<bytes.count).filter { $0.type == path[0] }
        if path.count == 1 { return boxes }
        return boxes.flatMap { find(bytes, Array(path.dropFirst()), in: $0.body) }
    }

    static func uint32(_ bytes: [UInt8], _ at: Int) -> Int {
        Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
    }

    static func uint64(_ bytes: [UInt8], _ at: Int) -> Int { uint32(bytes, at) << 32 | uint32(bytes, at + 4) }
}

/// ffprobe reading a file from a pipe: it cannot seek, as a reader over a
/// network without range requests.
func probeFromPipe(_ path: String) throws -> [String: Any] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["ffprobe", "-v", "error", "-of", "json", "-show_format", "-show_streams", "-i", "pipe:0"]
    process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
}

/// Whether ffmpeg decodes every stream of a file without an error (it
/// stops at the first one, with -xerror).
func decodesCleanly(_ path: String) throws -> Bool {
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

/// Files written in fragments become regular movies when finished: one
/// index after the media, the fragments inside one media data box.
@Suite struct HybridMovieTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    static func appendTone(_ input: AssetWriterInput, from start: MediaTime, seconds: Double) throws {
        let chunk = 480
        for index in 0..<Int(seconds * 100) {
            let samples = Tone.samples(count: chunk, channels: 2, rate: 48000, start: index * chunk)
            try samples.withUnsafeBytes {
                try input.appendAudio($0, format: .s16, channels: 2, sampleRate: 48000,
                                      presentationTime: start + MediaTime(value: Int64(index * chunk), timescale: 48000))
            }
        }
    }

    /// A video (H.264, B-frames unless `zeroLatency`) and an AAC track.
    static func writer(_ path: String, fragments: MediaTime?, keepFragments: Bool = false,
                       zeroLatency: Bool = true) throws -> (AssetWriter, AssetWriterInput, AssetWriterInput) {
        let writer = try AssetWriter(outputPath: path)
        if let fragments { writer.movieFragmentInterval = fragments }
        writer.keepsMovieFragments = keepFragments
        let video = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 320, height: 240, quality: 28, preset: zeroLatency ? "ultrafast" : "veryfast", maxKeyFrameInterval: 15,
            expectedFrameDuration: frameDuration, encoderOptions: zeroLatency ? ["tune": "zerolatency"] : [:])))
        let audio = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2)))
        try writer.add(video)
        try writer.add(audio)
        return (writer, video, audio)
    }

    @Test func aFinishedFragmentedFileIsARegularMovieWithItsMediaInPlace() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("hybrid.mp4")
        let (writer, video, audio) = try Self.writer(path, fragments: MediaTime(value: 1, timescale: 2))
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<90 { try video.append(NumberedFrames.make(number), presentationTime: Self.frameDuration * Int64(number)) }
        try Self.appendTone(audio, from: .zero, seconds: 3)
        try writer.endSession(atSourceTime: MediaTime(value: 3, timescale: 1))
        // The fragments as they are on disk before the finish.
        let fragmented = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try writer.finishWriting()

        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let top = Boxes.list(bytes, in: 0..<bytes.count)
        #expect(top.map(\.type) == ["ftyp", "free", "mdat", "moov"])
        // The media data box starts right before the first fragment and
        // holds every fragment; the media did not move.
        let mdat = try #require(top.first { $0.type == "mdat" })
        let firstMoof = try #require(Boxes.list(fragmented, in: 0..<fragmented.count).first { $0.type == "moof" })
        #expect(mdat.offset + mdat.headerSize == firstMoof.offset)
        #expect(mdat.headerSize == 8)
        // (The last fragment was written by the finish.)
        let written = min(mdat.offset + mdat.size, fragmented.count)
        #expect(written > firstMoof.offset + 1000)
        #expect(Array(bytes[firstMoof.offset..<written]) == Array(fragmented[firstMoof.offset..<written]))
        #expect(Boxes.list(bytes, in: mdat.body).filter { $0.type == "moof" }.count >= 6)

        // One index, complete: no 'mvex', sample tables with every sample.
        #expect(Boxes.find(bytes, ["moov", "mvex"]).isEmpty)
        let stsz = Boxes.find(bytes, ["moov", "trak", "mdia", "minf", "stbl", "stsz"])
        try #require(stsz.count == 2)
        #expect(Boxes.uint32(bytes, stsz[0].body.lowerBound + 8) == video.writtenFrameCount)
        #expect(video.writtenFrameCount == 90)
        // AAC: 3 s in packets of 1024 (the encoder's priming is not written).
        #expect(Boxes.uint32(bytes, stsz[1].body.lowerBound + 8) == (144_000 + 1023) / 1024)
        let stss = Boxes.find(bytes, ["moov", "trak", "mdia", "minf", "stbl", "stss"])
        #expect(stss.count == 1, "only the video track has sync samples listed")
        let syncCount = Boxes.uint32(bytes, stss[0].body.lowerBound + 4)
        #expect((0..<syncCount).map { Boxes.uint32(bytes, stss[0].body.lowerBound + 8 + 4 * $0) } == [1, 16, 31, 46, 61, 76])
        #expect(Boxes.find(bytes, ["moov", "trak", "mdia", "minf", "stbl", "stco"]).count == 2)
        #expect(Boxes.find(bytes, ["moov", "trak", "edts", "elst"]).count == 2)
        // AAC samples each need the one before (as libavformat states it).
        #expect(Boxes.find(bytes, ["moov", "trak", "mdia", "minf", "stbl", "sgpd"]).count == 1)

        // Durations everywhere: movie, tracks, media.
        let structure = try #require(try MovieStructure.read(path: path))
        #expect(!structure.isFragmented && structure.isFinished && structure.fragmentCount == 0)
        #expect(!structure.indexBeforeMedia)
        #expect(structure.movieDuration == MediaTime(value: 3, timescale: 1))
        #expect(structure.tracks.map(\.duration) == [MediaTime(value: 3, timescale: 1), MediaTime(value: 3, timescale: 1)])
        let mdhd = Boxes.find(bytes, ["moov", "trak", "mdia", "mdhd"])
        #expect(mdhd.allSatisfy { Boxes.uint32(bytes, $0.body.lowerBound + 16) > 0 })

        // Readers agree: ffprobe seeking, ffprobe from a pipe, the library.
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 90)
        for (index, frame) in frames.enumerated() { #expect(abs(frame.time - Double(index) / 30) < 1e-4, "frame \(index) at \(frame.time)") }
        #expect(Double(try FFprobe.format(path)["duration"] as? String ?? "") == 3.0)
        let piped = try probeFromPipe(path)
        #expect(Double((piped["format"] as? [String: Any])?["duration"] as? String ?? "") == 3.0)
        let pipedFrames = (piped["streams"] as? [[String: Any]])?.first { $0["codec_type"] as? String == "video" }?["nb_frames"] as? String
        #expect(pipedFrames == "90")
        let info = try MediaInfo.read(path: path)
        #expect(info.isFragmented == false && info.isFinished == true)
        #expect(info.tracks.first?.frameCount == 90)
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: .gray8)
        for (time, number) in [(0.0, 0), (1.5, 45), (2.99, 89)] {
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: time, preferredTimescale: 90000)))
            #expect(NumberedFrames.read(buffer) == number, "at \(time) s")
        }
        #expect(try decodesCleanly(path))
    }

    /// The same sessions (a pause with frames and sound in it, B-frames)
    /// give the same edit lists, durations and played frames as a file
    /// written in one piece, with the pause left out of the media of both.
    @Test(arguments: [true, false])
    func editListsAndDurationsMatchAFileWrittenInOnePiece(zeroLatency: Bool) throws {
        let scratch = try WriterScratchDirectory()
        var results = [(structure: MovieStructure, frames: [(time: Double, key: Bool)], audio: Int, videoSamples: Int)]()
        for fragmented in [false, true] {
            let path = scratch.file(fragmented ? "hybrid.mov" : "classic.mov")
            let (writer, video, audio) = try Self.writer(path, fragments: fragmented ? MediaTime(value: 1, timescale: 2) : nil,
                                                         zeroLatency: zeroLatency)
            try writer.startWriting()
            // Session one: 10 s … 11.5 s; paused until 13 s (frames and sound
            // still come); session two: 13 s … 14 s.
            let start = MediaTime(value: 10, timescale: 1)
            try writer.startSession(atSourceTime: start)
            for number in 0..<120 {
                let time = start + Self.frameDuration * Int64(number)
                if number == 45 { try writer.endSession(atSourceTime: MediaTime(value: 23, timescale: 2)) }
                if number == 90 { try writer.startSession(atSourceTime: MediaTime(value: 13, timescale: 1)) }
                try video.append(NumberedFrames.make(number), presentationTime: time)
                let tone = start + MediaTime(value: Int64(number) * 1600, timescale: 48000)
                let samples = Tone.samples(count: 1600, channels: 2, rate: 48000, start: number * 1600)
                try samples.withUnsafeBytes {
                    try audio.appendAudio($0, format: .s16, channels: 2, sampleRate: 48000, presentationTime: tone)
                }
            }
            try writer.endSession(atSourceTime: MediaTime(value: 14, timescale: 1))
            try writer.finishWriting()
            let structure = try #require(try MovieStructure.read(path: path))
            let samples = try FFprobe.json(["-select_streams", "v", "-show_entries", "stream=nb_frames", path])["streams"] as? [[String: Any]]
            let count = Int(samples?.first?["nb_frames"] as? String ?? "") ?? -1
            let decoded = try FFprobe.json(["-select_streams", "a", "-show_entries", "frame=nb_samples", path])["frames"] as? [[String: Any]] ?? []
            results.append((structure, try FFprobe.frames(path), decoded.compactMap { $0["nb_samples"] as? Int }.reduce(0, +), count))
            if fragmented {
                // Every frame written is in the index: those of the sessions.
                #expect(count == video.writtenFrameCount)
                #expect(!structure.isFragmented && structure.isFinished)
            }
        }
        let (classic, hybrid) = (results[0], results[1])
        #expect(hybrid.structure.movieDuration == classic.structure.movieDuration)
        #expect(hybrid.structure.movieDuration == MediaTime(value: 5, timescale: 2))
        #expect(hybrid.structure.tracks.map(\.duration) == classic.structure.tracks.map(\.duration))
        #expect(hybrid.structure.tracks.map(\.edits) == classic.structure.tracks.map(\.edits))
        // The pause is out of the media: one edit a track, which only says
        // where its media starts.
        #expect(hybrid.structure.tracks.map(\.edits.count) == [1, 1])
        // The same frames play at the same times: 0–44, then 90–119.
        #expect(hybrid.frames.count == classic.frames.count)
        #expect(hybrid.frames.count == 75)
        for (mine, theirs) in zip(hybrid.frames, classic.frames) { #expect(abs(mine.time - theirs.time) < 1e-4) }
        #expect(abs(hybrid.audio - classic.audio) <= 1024, "audio samples: \(hybrid.audio) and \(classic.audio)")
        // The paused frames are in neither file.
        #expect(hybrid.videoSamples == 75)
        #expect(classic.videoSamples == 75)
    }

    @Test func keptFragmentsStayFragmentedAndFinished() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("live.mp4")
        let (writer, video, audio) = try Self.writer(path, fragments: MediaTime(value: 1, timescale: 2), keepFragments: true)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<60 { try video.append(NumberedFrames.make(number), presentationTime: Self.frameDuration * Int64(number)) }
        try Self.appendTone(audio, from: .zero, seconds: 2)
        try writer.finishWriting()
        let top = try Boxes.topLevel(path).map(\.type)
        #expect(top.first == "ftyp" && top[1] == "moov")
        #expect(top.filter { $0 == "moof" }.count >= 4)
        #expect(top.last == "mfra")
        #expect(!top.contains("free"), "no session record in a file that stays fragmented")
        let structure = try #require(try MovieStructure.read(path: path))
        #expect(structure.isFragmented && structure.isFinished)
        #expect(try FFprobe.frames(path).count == 60)
    }

    /// A recording the process never finished: fragments, the session log,
    /// no fragment index. `info` tells it apart.
    @Test func anUnfinishedRecordingIsToldApart() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("live.mov")
        let (writer, video, audio) = try Self.writer(path, fragments: MediaTime(value: 1, timescale: 2))
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<60 { try video.append(NumberedFrames.make(number), presentationTime: Self.frameDuration * Int64(number)) }
        try Self.appendTone(audio, from: .zero, seconds: 2)
        let killed = scratch.file("killed.mov")
        try FileManager.default.copyItem(atPath: path, toPath: killed)
        try writer.finishWriting()
        let top = try Boxes.topLevel(killed).map(\.type)
        #expect(Array(top.prefix(3)) == ["ftyp", "moov", "free"])
        #expect(top.contains("moof") && !top.contains("mfra"))
        let structure = try #require(try MovieStructure.read(path: killed))
        #expect(structure.isFragmented && !structure.isFinished)
        let info = try MediaInfo.read(path: killed)
        #expect(info.isFinished == false && info.isFragmented == true)
        #expect((info.tracks.first?.frameCount ?? 0) >= 15)
        // The finished original is regular.
        #expect(try MovieStructure.read(path: path)?.isFinished == true)
    }

    /// A recording that ended before its first sample: a regular movie
    /// that plays nothing, finished.
    @Test func aRecordingWithNothingInItIsARegularEmptyMovie() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("empty.mp4")
        let (writer, _, _) = try Self.writer(path, fragments: MediaTime(value: 1, timescale: 2))
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try writer.finishWriting()
        let top = try Boxes.topLevel(path).map(\.type)
        #expect(top.first == "ftyp" && top[1] == "moov" && !top.contains("moof"))
        let structure = try #require(try MovieStructure.read(path: path))
        #expect(!structure.isFragmented && structure.isFinished)
        #expect(try FFprobe.run(["-show_format", path]).status == 0)
    }

    @Test func theSessionLogKeepsSessionsAndFirstDecodeTimes() throws {
        var log = SessionLog(trackCount: 2)
        log.firstDecodeTimes = [1920, nil]
        log.sessions = [SessionLog.Session(start: MediaTime(value: 1, timescale: 48000), end: MediaTime(value: 23, timescale: 2)),
                        SessionLog.Session(start: MediaTime(value: 13_000_000_001, timescale: 1_000_000_000), end: nil)]
        let box = log.box()
        #expect(box.count == SessionLog.boxSize)
        #expect(String(decoding: box[4..<8], as: UTF8.self) == "free")
        #expect(SessionLog(payload: Array(box[8...])) == log)
        #expect(SessionLog(payload: [UInt8](repeating: 0, count: 100)) == nil)
        // More sessions than fit: the log says it is incomplete.
        var full = SessionLog(trackCount: 2)
        full.sessions = (0..<200).map { SessionLog.Session(start: MediaTime(value: Int64($0 * 2), timescale: 1), end: MediaTime(value: Int64($0 * 2 + 1), timescale: 1)) }
        let read = try #require(SessionLog(payload: full.payload()))
        #expect(read.isIncomplete)
        #expect(read.sessions.count == SessionLog.capacity(trackCount: 2))
        #expect(read.sessions.first == full.sessions.first)
    }

    /// Tables as the regular movie states them: runs of durations and
    /// offsets, one size for equal sizes, 64-bit chunk offsets past 4 GiB.
    @Test func sampleTablesAreRunLengthCodedAndWidenPast4GiB() throws {
        var samples = FragmentIndex.TrackSamples(trackID: 1)
        samples.sizes = [10, 10, 10, 10]
        samples.decodeTimes = [0, 3000, 6000, 10000]
        samples.durations = [3000, 3000, 3000, 3000]
        samples.compositionOffsets = [0, 6000, -3000, 0]
        samples.syncSamples = [1, 4]
        samples.chunks = [.init(offset: 100, sampleCount: 2, descriptionIndex: 1),
                          .init(offset: (1 << 32) + 5, sampleCount: 2, descriptionIndex: 1)]
        let boxes = SampleTables.boxes(for: samples, rollsBackOne: false)
        #expect(boxes.map(\.type) == ["stts", "stss", "ctts", "stsc", "stsz", "co64"])
        let stts = boxes[0].payload
        #expect(Boxes.uint32(stts, 4) == 3)
        #expect([8, 12, 16, 20, 24, 28].map { Boxes.uint32(stts, $0) } == [2, 3000, 1, 4000, 1, 3000])
        let ctts = boxes[2].payload
        #expect(ctts[0] == 1, "a negative offset needs version 1")
        #expect(Boxes.uint32(boxes[4].payload, 4) == 10 && Boxes.uint32(boxes[4].payload, 8) == 4)
        #expect(Boxes.uint32(boxes[3].payload, 4) == 1, "two chunks of two samples: one entry")
        let co64 = boxes[5].payload
        #expect(Boxes.uint64(co64, 8) == 100 && Boxes.uint64(co64, 16) == (1 << 32) + 5)
        samples.chunks[1].offset = 200
        #expect(SampleTables.boxes(for: samples, rollsBackOne: false).last?.type == "stco")
        #expect(samples.mediaDuration == 13000)
    }
}
