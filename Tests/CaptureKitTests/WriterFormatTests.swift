import Foundation
import Testing
@testable import CaptureKit

/// Codecs, containers, audio, fragments, metadata and groups, checked with ffprobe.
@Suite struct WriterFormatTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    static func video(_ codec: VideoCodec, width: Int = 320, height: Int = 240, keyframes: Int? = nil,
                      keyframeDuration: MediaTime? = nil) -> AssetWriterInput {
        AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: codec, width: width, height: height, quality: codec == .mjpeg ? 4 : 30,
            preset: codec == .h264 || codec == .hevc ? "ultrafast" : nil, maxKeyFrameInterval: keyframes,
            maxKeyFrameIntervalDuration: keyframeDuration, expectedFrameDuration: frameDuration)))
    }

    static func appendFrames(_ input: AssetWriterInput, _ numbers: Range<Int>) throws {
        for number in numbers {
            try input.append(NumberedFrames.make(number), presentationTime: frameDuration * Int64(number))
        }
    }

    /// Appends `seconds` of a tone in 10 ms buffers, as a capture thread would.
    static func appendTone(_ input: AssetWriterInput, seconds: Int, rate: Int = 48000, channels: Int = 2, from start: MediaTime = .zero) throws {
        let chunk = rate / 100
        for index in 0..<(seconds * 100) {
            let samples = Tone.samples(count: chunk, channels: channels, rate: rate, start: index * chunk)
            try samples.withUnsafeBytes {
                try input.appendAudio($0, format: .s16, channels: channels, sampleRate: rate,
                                      presentationTime: start + MediaTime(value: Int64(index * chunk), timescale: Int32(rate)))
            }
        }
    }

    @Test(arguments: [(VideoCodec.hevc, "mkv"), (.vp9, "webm"), (.av1, "mkv"), (.mjpeg, "mov"), (.h264, "ts")])
    func everyVideoEncoderWritesEveryFrame(codec: VideoCodec, container: String) throws {
        guard EncoderCatalog.encoderName(for: codec) != nil else { return }
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("clip.\(container)")
        let writer = try AssetWriter(outputPath: path)
        let input = Self.video(codec, keyframeDuration: MediaTime(value: 1, timescale: 2))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendFrames(input, 0..<30)
        try writer.finishWriting()
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 30, "\(codec) in \(container)")
        // A keyframe at least every half second.
        let keyTimes = frames.filter(\.key).map { $0.time - frames[0].time }
        #expect(keyTimes.contains { abs($0) < 1e-3 } && keyTimes.contains { abs($0 - 0.5) < 2e-3 }, "\(keyTimes)")
        // The pictures are the ones appended.
        let item = try PlayerItem(path: path)
        let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
        for number in [0, 13, 29] {
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: (Double(number) + 0.5) / 30, preferredTimescale: 90000)))
            #expect(NumberedFrames.read(buffer) == number, "\(codec) frame \(number)")
        }
    }

    @Test func pcmInWAVKeepsEverySample() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("tone.wav")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .pcm(.s16), sampleRate: 48000, channels: 2)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendTone(input, seconds: 2)
        try writer.finishWriting()
        let stream = try #require(try FFprobe.streams(path).first)
        #expect(stream["duration_ts"] as? Int == 96000)
        #expect(stream["sample_rate"] as? String == "48000")
        #expect(stream["channels"] as? Int == 2)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        // 44-byte header (or a little more) plus 96000 frames of 4 bytes.
        #expect(data.count >= 96000 * 4 + 44 && data.count < 96000 * 4 + 200)
    }

    /// A microphone whose sample clock runs fast or slow against the
    /// capture clock: 60 s by the stamps is 60 s in the file, give or take
    /// the 10 ms the writer lets pass before it corrects (a 0.08 % error is
    /// stretched away; 5 % is more than stretching mends, and samples are
    /// dropped or silence added).
    @Test(arguments: [0.0008, -0.0008, 0.05, -0.05, 0])
    func audioFollowsItsTimeStampsWhenTheDeviceClockDrifts(error: Double) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("drift.wav")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .pcm(.s16), sampleRate: 48000, channels: 2)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        // 960 samples a chunk, stamped as a device whose 48000 Hz is really 48000 * (1 + error) Hz.
        let chunk = Tone.samples(count: 960, channels: 2, rate: 48000)
        let trueRate = 48000 * (1 + error)
        var index = 0
        var lastStamp: Int64 = 0
        while Double(index * 960) / trueRate < 60 {
            lastStamp = Int64((Double(index * 960) / trueRate * 1e9).rounded())
            try chunk.withUnsafeBytes {
                try input.appendAudio($0, format: .s16, channels: 2, sampleRate: 48000,
                                      presentationTime: MediaTime(value: lastStamp, timescale: 1_000_000_000))
            }
            index += 1
        }
        try writer.finishWriting()
        let stream = try #require(try FFprobe.streams(path).first)
        let written = try #require(stream["duration_ts"] as? Int)
        // The stamps say the last chunk starts at lastStamp and holds 960 samples.
        let stamped = Int((Double(lastStamp) * 48000 / 1e9).rounded()) + 960
        #expect(abs(written - stamped) <= 480 + 960, "\(written) samples written for \(stamped) by the stamps (device off by \(error * 100) %)")
        if error == 0 { #expect(written == index * 960) }
    }

    @Test func audioIsResampledAndRegroupedForTheEncoder() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("voice.m4a")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2, bitRate: 128_000)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        // 44.1 kHz mono in, 48 kHz stereo out.
        try Self.appendTone(input, seconds: 2, rate: 44100, channels: 1)
        try writer.finishWriting()
        let stream = try #require(try FFprobe.streams(path).first)
        #expect(stream["codec_name"] as? String == "aac")
        #expect(stream["sample_rate"] as? String == "48000")
        #expect(stream["channels"] as? Int == 2)
        // The edit list trims the encoder's priming: the file lasts what was appended.
        let format = try FFprobe.format(path)
        let duration = try #require(Double(format["duration"] as? String ?? ""))
        #expect(abs(duration - 2.0) < 0.001)
        let samples = try FFprobe.json(["-select_streams", "a", "-show_entries", "frame=nb_samples", path])["frames"] as? [[String: Any]] ?? []
        let decoded = samples.compactMap { $0["nb_samples"] as? Int }.reduce(0, +)
        // libavformat trims the priming; the padding of the last frame is
        // beyond the edit but still decoded.
        #expect(decoded >= 96000 && decoded < 96000 + 1024, "decoded \(decoded) samples")
    }

    @Test(arguments: [("opus", AudioCodec.opus), ("ogg", .flac), ("flac", .flac), ("mkv", .pcm(.f32)), ("webm", .opus)])
    func audioContainers(container: String, codec: AudioCodec) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("sound.\(container)")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: codec, sampleRate: 48000, channels: 2)))
        try writer.add(input)
        writer.metadata = [.title("Tone"), MetadataItem(key: "location", value: "bench")]
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try Self.appendTone(input, seconds: 1)
        try writer.finishWriting()
        let samples = try FFprobe.json(["-select_streams", "a", "-show_entries", "frame=nb_samples", path])["frames"] as? [[String: Any]] ?? []
        let decoded = samples.compactMap { $0["nb_samples"] as? Int }.reduce(0, +)
        // Lossless codecs keep every sample; Opus may pad its last frame.
        if codec == .opus {
            #expect(decoded >= 48000 && decoded < 48000 + 960, "\(container): \(decoded)")
        } else {
            #expect(decoded == 48000, "\(container): \(decoded)")
        }
        // Ogg keeps comments with the stream; the others with the file.
        let probed = try FFprobe.json(["-show_format", "-show_streams", path])
        let formatTags = (probed["format"] as? [String: Any])?["tags"] as? [String: String] ?? [:]
        let streamTags = ((probed["streams"] as? [[String: Any]])?.first?["tags"] as? [String: String]) ?? [:]
        let tags = formatTags.merging(streamTags) { a, _ in a }.reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
        #expect(tags["title"] == "Tone", "\(container): \(tags)")
    }

    @Test func audioSessionsAreTrimmedToTheSampleWithoutEditLists() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("trimmed.wav")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .pcm(.s16), sampleRate: 48000, channels: 1)))
        try writer.add(input)
        try writer.startWriting()
        // Sessions cut into the middle of 10 ms buffers.
        try writer.startSession(atSourceTime: MediaTime(value: 12345, timescale: 48000))
        try writer.endSession(atSourceTime: MediaTime(value: 30000, timescale: 48000))
        try writer.startSession(atSourceTime: MediaTime(value: 50001, timescale: 48000))
        try writer.endSession(atSourceTime: MediaTime(value: 60000, timescale: 48000))
        try Self.appendTone(input, seconds: 2, channels: 1)
        try writer.finishWriting()
        let stream = try #require(try FFprobe.streams(path).first)
        #expect(stream["duration_ts"] as? Int == (30000 - 12345) + (60000 - 50001))
    }

    @Test func videoAndAudioTogether() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("both.mp4")
        let writer = try AssetWriter(outputPath: path)
        let video = Self.video(.h264, keyframes: 15)
        let audio = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2)))
        try writer.add(video)
        try writer.add(audio)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for second in 0..<2 {
            try Self.appendFrames(video, (second * 30)..<(second * 30 + 30))
            try Self.appendTone(audio, seconds: 1, from: MediaTime(value: Int64(second), timescale: 1))
        }
        try writer.finishWriting()
        let streams = try FFprobe.streams(path)
        #expect(streams.count == 2)
        #expect(streams.first { $0["codec_type"] as? String == "video" }?["nb_read_frames"] as? String == "60")
        let format = try FFprobe.format(path)
        #expect(abs((Double(format["duration"] as? String ?? "") ?? 0) - 2.0) < 0.001)
        let structure = try #require(try MovieStructure.read(path: path))
        #expect(structure.tracks.count == 2)
        #expect(structure.tracks.allSatisfy { $0.isEnabled && $0.alternateGroup == 0 })
        #expect(structure.movieTimescale == 90000)
    }

    /// A frame shows until the next one; the last until the session ends,
    /// however long before its end the camera delivered it. Without an end,
    /// the last frame keeps its own duration.
    @Test(arguments: [("mp4", true), ("mp4", false), ("mkv", false)])
    func theLastFrameLastsUntilTheSessionEnds(container: String, fragmented: Bool) throws {
        let scratch = try WriterScratchDirectory()
        for ended in [true, false] {
            let path = scratch.file("\(ended ? "ended" : "open").\(container)")
            let writer = try AssetWriter(outputPath: path)
            writer.movieFragmentInterval = fragmented ? MediaTime(value: 1, timescale: 3) : .invalid
            let video = Self.video(.h264, keyframes: 15)
            try writer.add(video)
            try writer.startWriting()
            try writer.startSession(atSourceTime: .zero)
            try Self.appendFrames(video, 0..<10)
            if ended { try writer.endSession(atSourceTime: MediaTime(value: 1, timescale: 1)) }
            try writer.finishWriting()
            let stream = try #require(try FFprobe.streams(path).first)
            #expect(stream["nb_read_frames"] as? String == "10")
            // Matroska states durations for the file, not per track.
            let fileDuration = try FFprobe.format(path)["duration"] as? String
            let stated = stream["duration"] as? String ?? fileDuration
            let duration = stated.flatMap(Double.init) ?? .nan
            let expected = ended ? 1.0 : 10.0 / 30
            #expect(abs(duration - expected) < 0.002, "\(path): the video lasts \(duration) s, not \(expected) s")
            #expect(try FFprobe.frames(path).last.map { abs($0.time - 9.0 / 30) < 0.002 } == true)
        }
    }

    @Test func alternateAudioTracksShareAGroupWithOneEnabled() throws {
        for container in ["mov", "mkv"] {
            let scratch = try WriterScratchDirectory()
            let path = scratch.file("mics.\(container)")
            let writer = try AssetWriter(outputPath: path)
            let video = Self.video(.h264)
            let first = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 1)))
            let second = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 1)))
            for input in [video, first, second] { try writer.add(input) }
            let group = AssetWriterInputGroup(inputs: [first, second], defaultInput: second)
            #expect(writer.canAdd(group))
            try writer.add(group)
            #expect(!writer.canAdd(AssetWriterInputGroup(inputs: [first], defaultInput: first)), "already grouped")
            #expect(!writer.canAdd(AssetWriterInputGroup(inputs: [video, first], defaultInput: video)))
            try writer.startWriting()
            try writer.startSession(atSourceTime: .zero)
            try Self.appendFrames(video, 0..<10)
            try Self.appendTone(first, seconds: 1, channels: 1)
            try Self.appendTone(second, seconds: 1, channels: 1)
            try writer.finishWriting()

            let streams = try FFprobe.json(["-show_streams", path])["streams"] as? [[String: Any]] ?? []
            let defaults = streams.map { (($0["disposition"] as? [String: Any])?["default"] as? Int) ?? -1 }
            #expect(defaults == [1, 0, 1], "\(container): \(defaults)")
            if container == "mov" {
                let tracks = try #require(try MovieStructure.read(path: path)).tracks
                #expect(tracks.map(\.isEnabled) == [true, false, true])
                #expect(tracks[1].alternateGroup == tracks[2].alternateGroup && tracks[1].alternateGroup != 0)
                #expect(tracks[0].alternateGroup == 0)
            }
        }
        let scratch = try WriterScratchDirectory()
        let ts = try AssetWriter(outputPath: scratch.file("mics.ts"))
        let a = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 1)))
        let b = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 1)))
        try ts.add(a)
        try ts.add(b)
        #expect(!ts.canAdd(AssetWriterInputGroup(inputs: [a, b], defaultInput: a)))
    }

    @Test func metadataIsWritten() throws {
        for container in ["mp4", "mov", "mkv"] {
            let scratch = try WriterScratchDirectory()
            let path = scratch.file("tagged.\(container)")
            let writer = try AssetWriter(outputPath: path)
            let input = Self.video(.h264)
            try writer.add(input)
            writer.metadata = [.title("Garden"), .comment("dawn chorus"), .creationDate("2024-05-01T06:30:00Z"),
                               .make("Acme"), .model("Cam 3"), MetadataItem(key: "scene", value: "42")]
            try writer.startWriting()
            try writer.startSession(atSourceTime: .zero)
            try Self.appendFrames(input, 0..<5)
            try writer.finishWriting()
            let tags = (try FFprobe.format(path)["tags"] as? [String: String] ?? [:])
                .reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
            #expect(tags["title"] == "Garden", "\(container): \(tags)")
            #expect(tags["comment"] == "dawn chorus", "\(container): \(tags)")
            #expect(tags["creation_time"]?.hasPrefix("2024-05-01T06:30:00") == true, "\(container): \(tags)")
            #expect(tags["make"] == "Acme", "\(container): \(tags)")
            #expect(tags["model"] == "Cam 3", "\(container): \(tags)")
            #expect(tags["scene"] == "42", "\(container): \(tags)")
        }
        let scratch = try WriterScratchDirectory()
        let writer = try AssetWriter(outputPath: scratch.file("baddate.mp4"))
        try writer.add(Self.video(.h264))
        writer.metadata = [.creationDate("last Tuesday")]
        #expect(throws: WriterError.self) { try writer.startWriting() }
    }

    @Test func networkLayoutPutsTheIndexFirstAndKeepsTheFilePlayable() throws {
        let scratch = try WriterScratchDirectory()
        for network in [false, true] {
            let path = scratch.file("layout-\(network).mp4")
            let writer = try AssetWriter(outputPath: path)
            writer.shouldOptimizeForNetworkUse = network
            writer.movieTimeScale = 600
            let video = Self.video(.h264, keyframes: 10)
            let audio = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2)))
            try writer.add(video)
            try writer.add(audio)
            try writer.startWriting()
            try writer.startSession(atSourceTime: .zero)
            try Self.appendFrames(video, 0..<60)
            try Self.appendTone(audio, seconds: 2)
            try writer.finishWriting()
            let structure = try #require(try MovieStructure.read(path: path))
            #expect(structure.indexBeforeMedia == network)
            #expect(structure.movieTimescale == 600)
            #expect(structure.movieDuration == MediaTime(value: 2, timescale: 1))
            let frames = try FFprobe.frames(path)
            #expect(frames.count == 60)
            let item = try PlayerItem(path: path)
            let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
            let last = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(value: 119, timescale: 60)))
            #expect(NumberedFrames.read(last) == 59)
            let decoded = try FFprobe.json(["-select_streams", "a", "-show_entries", "frame=nb_samples", path])["frames"] as? [[String: Any]] ?? []
            let sampleCount = decoded.compactMap { $0["nb_samples"] as? Int }.reduce(0, +)
            #expect(sampleCount >= 96000 && sampleCount < 96000 + 1024)
        }
    }

    @Test func fragmentedFileCutAnywherePlaysUpToItsLastCompleteFragment() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("live.mp4")
        let writer = try AssetWriter(outputPath: path)
        writer.movieFragmentInterval = MediaTime(value: 1, timescale: 2)
        // The fragments as a recording leaves them while it runs.
        writer.keepsMovieFragments = true
        let video = Self.video(.h264)
        let audio = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2)))
        try writer.add(video)
        try writer.add(audio)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for second in 0..<3 {
            try Self.appendFrames(video, (second * 30)..<(second * 30 + 30))
            try Self.appendTone(audio, seconds: 1, from: MediaTime(value: Int64(second), timescale: 1))
        }
        try writer.finishWriting()

        let structure = try #require(try MovieStructure.read(path: path))
        #expect(structure.fragmentCount >= 6)
        #expect(structure.indexBeforeMedia)
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 90)
        // Both tracks start at 0: the AAC encoder's priming is not written,
        // so the timeline needs no room for it.
        #expect(abs(frames[0].time) < 1e-4 && abs(frames[1].time - 1.0 / 30) < 1e-4, "\(frames.prefix(2))")
        let audioStart = try FFprobe.json(["-select_streams", "a", "-show_entries", "stream=start_time", path])["streams"] as? [[String: Any]]
        #expect(Double(audioStart?.first?["start_time"] as? String ?? "") == 0)
        // Keyframes every half second, so each fragment starts with one.
        #expect(frames.enumerated().filter { $0.element.key }.map(\.offset) == [0, 15, 30, 45, 60, 75])

        // Where each fragment ends, and how many frames precede that point.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        var fragmentEnds = [Int]()
        var offset = 0
        while offset + 8 <= bytes.count {
            let size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if type == "mdat" { fragmentEnds.append(offset + size) }
            guard size >= 8 else { break }
            offset += size
        }
        #expect(fragmentEnds.count == structure.fragmentCount)
        var framesBefore = [Int: Int]()
        for end in fragmentEnds {
            let cut = scratch.file("cut-\(end).mp4")
            try bytes.prefix(end).write(to: URL(fileURLWithPath: cut))
            framesBefore[end] = try FFprobe.frames(cut).count
        }
        // Cut at many offsets, including inside boxes and headers.
        let step = max(1, bytes.count / 60)
        for cutAt in stride(from: 200, to: bytes.count, by: step) + [bytes.count - 1] {
            let cut = scratch.file("cut.mp4")
            try? FileManager.default.removeItem(atPath: cut)
            try bytes.prefix(cutAt).write(to: URL(fileURLWithPath: cut))
            let complete = fragmentEnds.filter { $0 <= cutAt }.max()
            let expected = complete.flatMap { framesBefore[$0] } ?? 0
            // ffprobe reads the cut file too, except where libavformat 5.1
            // stops at a fragment header cut in half; the library does not.
            let probe = try FFprobe.run(["-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", cut])
            if probe.status == 0 {
                let count = Int(probe.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                #expect(count >= expected, "cut at \(cutAt): \(count) frames, \(expected) complete")
            }
            // The library opens it too, and finds the last complete frame.
            if expected > 0 {
                let item = try PlayerItem(path: cut)
                let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
                let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: (Double(expected) - 0.5) / 30, preferredTimescale: 90000)))
                #expect(NumberedFrames.read(buffer) == expected - 1, "cut at \(cutAt)")
            }
        }
    }

    /// H.264 as a camera delivers it: Annex B, parameter sets in band, no
    /// configuration up front. The file's header waits for the first
    /// keyframe's parameter sets; every frame then decodes, in fragmented and
    /// classic MP4, QuickTime, MPEG-TS and Matroska alike.
    @Test(arguments: [("mp4", true), ("mp4", false), ("mov", false), ("ts", false), ("mkv", false)])
    func annexBH264WithoutConfigurationIsWrittenPlayable(container: String, fragmented: Bool) throws {
        let scratch = try WriterScratchDirectory()
        let encoded = scratch.file("encoded.mp4")
        let source = try AssetWriter(outputPath: encoded)
        let h264 = Self.video(.h264, keyframes: 10)
        try source.add(h264)
        try source.startWriting()
        try source.startSession(atSourceTime: .zero)
        try Self.appendFrames(h264, 0..<30)
        try source.finishWriting()
        let camera = scratch.file("camera.h264")
        let converted = Process()
        converted.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        converted.arguments = ["ffmpeg", "-v", "error", "-nostdin", "-i", encoded, "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", camera]
        try converted.run()
        converted.waitUntilExit()
        try #require(converted.terminationStatus == 0)

        let reader = try CompressedSampleReader(path: camera, mediaType: .video)
        let path = scratch.file("copy.\(container)")
        let writer = try AssetWriter(outputPath: path)
        if fragmented { writer.movieFragmentInterval = MediaTime(value: 1, timescale: 3) }
        let input = AssetWriterInput(outputSettings: .passthrough(.video(codecName: "h264", width: 320, height: 240)))
        #expect(input.needsConfigurationFromFirstFrame)
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        var number = 0
        while let sample = try reader.next() {
            #expect(Array(sample.data.prefix(4)) == [0, 0, 0, 1] || Array(sample.data.prefix(3)) == [0, 0, 1], "frame \(number) is not Annex B")
            try sample.data.withUnsafeBytes {
                try input.appendCompressed($0, presentationTime: Self.frameDuration * Int64(number), isKeyframe: sample.isKeyframe)
            }
            number += 1
        }
        try writer.finishWriting()
        #expect(number == 30)
        let item = try PlayerItem(path: path)
        let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
        for wanted in [0, 9, 10, 29] {
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: (Double(wanted) + 0.5) / 30, preferredTimescale: 90000)))
            #expect(NumberedFrames.read(buffer) == wanted, "\(path) frame \(wanted)")
        }
        #expect(try FFprobe.frames(path).count == 30)
    }

    /// A compressed frame in memory someone else owns, as a capture buffer
    /// is; `released` counts the frames whose last reference went.
    final class OwnedFrame {
        let bytes: UnsafeMutableRawBufferPointer
        private let released: UnsafeMutablePointer<Int>

        init(copying data: [UInt8], released: UnsafeMutablePointer<Int>) {
            let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 64)
            data.withUnsafeBytes { memory.copyMemory(from: $0) }
            bytes = memory
            self.released = released
        }

        deinit {
            bytes.deallocate()
            released.pointee += 1
        }
    }

    /// Frames appended with an owner are written unchanged, and the owner
    /// goes as soon as the muxer is done with the frame: in a file with one
    /// track the packet refers to the owner's memory, in one with more it is
    /// a copy. The writer holds back a video track's latest packet (its
    /// duration is settled at the end), so at most that one capture buffer
    /// stays out after an append, and none once the file is finished.
    @Test(arguments: [("mp4", true, false), ("mp4", false, false), ("mkv", false, false), ("mp4", true, true)])
    func passthroughFromOwnedMemoryLetsGoOfIt(container: String, fragmented: Bool, withAudio: Bool) throws {
        let scratch = try WriterScratchDirectory()
        let sourcePath = scratch.file("camera.mkv")
        let source = try AssetWriter(outputPath: sourcePath)
        let mjpeg = Self.video(.mjpeg)
        try source.add(mjpeg)
        try source.startWriting()
        try source.startSession(atSourceTime: .zero)
        try Self.appendFrames(mjpeg, 0..<30)
        try source.finishWriting()

        let reader = try CompressedSampleReader(path: sourcePath, mediaType: .video)
        let path = scratch.file("copy.\(container)")
        let writer = try AssetWriter(outputPath: path)
        if fragmented { writer.movieFragmentInterval = MediaTime(value: 1, timescale: 3) }
        let input = AssetWriterInput(outputSettings: .passthrough(reader.format))
        try writer.add(input)
        let audio = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2, bitRate: 128_000)))
        if withAudio { try writer.add(audio) }
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        if withAudio { try Self.appendTone(audio, seconds: 1) }
        let released = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        released.pointee = 0
        defer { released.deallocate() }
        var count = 0
        while let sample = try reader.next() {
            do {
                let frame = OwnedFrame(copying: sample.data, released: released)
                try input.appendCompressed(UnsafeRawBufferPointer(frame.bytes), keeping: frame, presentationTime: sample.presentationTime,
                                           duration: sample.duration, isKeyframe: sample.isKeyframe)
            }
            count += 1
            #expect(released.pointee >= count - 1, "\(count - released.pointee) frames are still held after frame \(count - 1)'s append")
        }
        try writer.finishWriting()
        #expect(count == 30)
        #expect(released.pointee == 30)
        let hashes = { (file: String) throws -> [String] in
            let packets = try FFprobe.json(["-select_streams", "v", "-show_data_hash", "md5", "-show_entries", "packet=data_hash", file])["packets"]
            return (packets as? [[String: Any]] ?? []).compactMap { $0["data_hash"] as? String }
        }
        let written = try hashes(path)
        #expect(written.count == 30)
        #expect(written == (try hashes(sourcePath)))
    }

    @Test func passthroughWritesCompressedSamplesUnchanged() throws {
        let scratch = try WriterScratchDirectory()
        // A camera-like MJPEG stream, and H.264 with B-frames, read back as compressed samples.
        let mjpegSource = scratch.file("camera.mkv")
        let source = try AssetWriter(outputPath: mjpegSource)
        let mjpeg = Self.video(.mjpeg)
        let h264 = AssetWriterInput(outputSettings: .video(VideoOutputSettings(codec: .h264, width: 320, height: 240, maxKeyFrameInterval: 10, expectedFrameDuration: Self.frameDuration)))
        try source.add(mjpeg)
        try source.startWriting()
        try source.startSession(atSourceTime: .zero)
        try Self.appendFrames(mjpeg, 0..<20)
        try source.finishWriting()
        let h264Source = scratch.file("encoded.mp4")
        let other = try AssetWriter(outputPath: h264Source)
        try other.add(h264)
        try other.startWriting()
        try other.startSession(atSourceTime: .zero)
        try Self.appendFrames(h264, 0..<20)
        try other.finishWriting()

        for (sourcePath, container) in [(mjpegSource, "mov"), (h264Source, "mkv"), (h264Source, "mp4")] {
            let reader = try CompressedSampleReader(path: sourcePath, mediaType: .video)
            let path = scratch.file("copy-\(reader.format.codecName).\(container)")
            let writer = try AssetWriter(outputPath: path)
            let input = AssetWriterInput(outputSettings: .passthrough(reader.format))
            try writer.add(input)
            try writer.startWriting()
            try writer.startSession(atSourceTime: .zero)
            var sizes = [Int]()
            while let sample = try reader.next() {
                sizes.append(sample.data.count)
                try input.append(sample)
            }
            try writer.finishWriting()
            #expect(input.encoderName == nil)
            let packets = try FFprobe.json(["-select_streams", "v", "-show_entries", "packet=size", path])["packets"] as? [[String: Any]] ?? []
            #expect(packets.count == 20, "\(path)")
            if reader.format.codecName == "mjpeg" {
                #expect(packets.compactMap { ($0["size"] as? String).flatMap(Int.init) } == sizes)
            }
            let item = try PlayerItem(path: path)
            let output = try PlayerItemVideoOutput(item: item, pixelFormat: .gray8)
            for number in [0, 7, 19] {
                let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: (Double(number) + 0.5) / 30, preferredTimescale: 90000)))
                #expect(NumberedFrames.read(buffer) == number, "\(path) frame \(number)")
            }
        }
    }
}

/// What a recording copies compressed frames with: the source's codec
/// configuration goes along; where the container needs it up front and the
/// camera has none to give, the recording is refused before it starts.
@Suite struct PassthroughSettingsTests {
    static func format(_ codec: String, configuration: [UInt8] = []) -> CaptureVideoFormat {
        CaptureVideoFormat(layout: .compressed(codecName: codec), width: 320, height: 240,
                           frameDuration: MediaTime(value: 1, timescale: 30), fourcc: "H264", codecConfiguration: configuration)
    }

    @Test func aFilesCodecConfigurationTravelsWithItsFrames() throws {
        var settings = RecordingSettings()
        settings.video = .passthrough
        let record: [UInt8] = [1, 0x64, 0, 0x1E, 0xFF]
        let chosen = try settings.outputSettings(forVideo: Self.format("h264", configuration: record), fileType: .matroska)
        guard case .passthrough(let format) = chosen else { Issue.record("not passthrough: \(chosen)"); return }
        #expect(format.codecName == "h264")
        #expect(format.extradata == record)
    }

    /// A camera's H.264/HEVC (parameter sets in band) is copied into every
    /// movie container: the writer's header waits for its first keyframe.
    @Test func cameraH264IsCopiedIntoEveryMovieContainer() throws {
        var settings = RecordingSettings()
        settings.video = .passthrough
        for codec in ["h264", "hevc"] {
            for fileType in [FileType.mp4, .quickTimeMovie, .mpegTS, .matroska] {
                let chosen = try settings.outputSettings(forVideo: Self.format(codec), fileType: fileType)
                guard case .passthrough(let format) = chosen else { Issue.record("\(fileType): not passthrough"); continue }
                #expect(format.extradata.isEmpty)
                #expect(AssetWriterInput(outputSettings: chosen).needsConfigurationFromFirstFrame)
            }
        }
        // MJPEG needs no configuration anywhere.
        _ = try settings.outputSettings(forVideo: Self.format("mjpeg"), fileType: .matroska)
    }
}
