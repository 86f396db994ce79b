@testable import CaptureKit
import Foundation
import Testing

/// AssetWriterInput.append(SampleBuffer): raw, MJPEG (decoded or passed
/// through) and audio samples as a session gives them, read back by ffprobe.
@Suite struct AppendSampleBufferTests {
    /// A raw MJPEG stream of `count` 320x240 frames, made by ffmpeg.
    static func mjpegFile(_ path: String, count: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-frames:v", "\(count)",
                             "-c:v", "mjpeg", "-pix_fmt", "yuvj420p", "-f", "mjpeg", path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// The samples of a file camera, copied.
    static func fileSamples(_ path: String) throws -> [VideoSampleBuffer] {
        let source = FileCaptureSource(path: path, realtime: false)
        try source.open()
        defer { source.close() }
        var samples: [VideoSampleBuffer] = []
        captureSamples(source) { if let video = $0.videoSample { samples.append(video.detached()) } }
        return samples
    }

    static func write(_ samples: [SampleBuffer], to path: String, settings: OutputSettings) throws -> AssetWriter {
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: settings)
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: samples[0].presentationTime)
        for sample in samples { try input.append(sample) }
        try writer.finishWriting()
        return writer
    }

    static let h264 = OutputSettings.video(VideoOutputSettings(codec: .h264, width: 320, height: 240, preset: "ultrafast"))

    @Test func rawSamplesAreEncoded() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("raw.mp4")
        let samples = try ImageBufferTests.samples("YUYV", count: 15)
        let writer = try Self.write(samples.map { .video($0) }, to: path, settings: Self.h264)
        #expect(writer.status == .completed)
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 15)
        // Each frame lasts the camera's frame interval: the file is 15 frames at 30 fps long.
        let duration = try #require((try FFprobe.format(path)["duration"] as? String).flatMap(Double.init))
        #expect(abs(duration - 0.5) < 0.02)
    }

    @Test func mjpegSamplesAreDecodedForAnInputThatEncodes() throws {
        let scratch = try WriterScratchDirectory()
        let camera = scratch.file("camera.mjpeg")
        try Self.mjpegFile(camera, count: 12)
        let samples = try Self.fileSamples(camera)
        #expect(samples.count == 12)
        #expect(samples.first?.layout == .compressed(codecName: "mjpeg"))
        let path = scratch.file("decoded.mp4")
        let writer = try Self.write(samples.map { .video($0) }, to: path, settings: Self.h264)
        #expect(writer.status == .completed)
        #expect(try FFprobe.frames(path).count == 12)
        #expect(try FFprobe.streams(path).first?["codec_name"] as? String == "h264")
    }

    @Test func mjpegSamplesPassThrough() throws {
        let scratch = try WriterScratchDirectory()
        let camera = scratch.file("camera.mjpeg")
        try Self.mjpegFile(camera, count: 12)
        let samples = try Self.fileSamples(camera)
        let path = scratch.file("copied.mkv")
        let writer = try Self.write(samples.map { .video($0) }, to: path,
                                    settings: .passthrough(.video(codecName: "mjpeg", width: 320, height: 240)))
        #expect(writer.status == .completed)
        #expect(try FFprobe.frames(path).count == 12)
        #expect(try FFprobe.streams(path).first?["codec_name"] as? String == "mjpeg")
    }

    @Test func audioSamplesAreEncoded() throws {
        let scratch = try WriterScratchDirectory()
        let source = TestToneSource(request: CaptureAudioRequest(sampleRate: 48000, channels: 1), realtime: false)
        try source.open()
        var samples: [SampleBuffer] = []
        var total = 0
        let stop = CaptureStopSignal()
        _ = source.run(stop: stop) { sample in
            guard let audio = sample.audioSample, total < 48000 else { return }
            samples.append(.audio(audio.copied()))
            total += audio.frameCount
            if total >= 48000 { stop.raise() }
        }
        source.close()
        #expect(total >= 48000)
        let path = scratch.file("tone.m4a")
        let writer = try Self.write(samples, to: path, settings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 1)))
        #expect(writer.status == .completed)
        let stream = try #require(try FFprobe.streams(path).first)
        #expect(stream["codec_name"] as? String == "aac")
        let frames = try #require((stream["nb_read_frames"] as? String).flatMap(Int.init))
        // AAC codes 1024 samples a frame; its priming is left out.
        #expect(abs(frames - (total + 1023) / 1024) <= 1)
    }

    /// A frame in a pixel format no converter reads (NV16, a camera's 4:2:2
    /// semi-planar format) is refused with an error that names the format:
    /// nothing of it reaches the file, the writer goes on, and every picture
    /// the file holds is one that was given (its counter reads back).
    @Test func aFrameInAFormatTheInputCannotConvertIsRefusedAndLeavesNoPicture() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("refused.mp4")
        let samples = try ImageBufferTests.samples("YUYV", count: 10)
        let start = samples[0].presentationTime
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: Self.h264)
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: start)
        for sample in samples.prefix(5) { try input.append(.video(sample)) }

        let nv16 = try #require(PixelFormat(name: "nv16"))
        #expect(!nv16.isConvertible(asInput: true))
        let size = try #require(nv16.imageSize(width: 320, height: 240))
        let unreadable = VideoSampleBuffer(storage: SampleStorage(count: size) { $0.initializeMemory(as: UInt8.self, repeating: 128) },
                                           layout: .raw(nv16, bytesPerRow: nil), width: 320, height: 240,
                                           presentationTime: samples[4].presentationTime + MediaTime(value: 1, timescale: 100),
                                           duration: nil, sequence: 99)
        do {
            try input.append(.video(unreadable))
            Issue.record("an NV16 frame was taken")
        } catch {
            guard case .invalidSettings(let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("nv16"), "\(reason)")
        }
        #expect(writer.status == .writing)
        #expect(input.writtenFrameCount == 5)

        for sample in samples.dropFirst(5) { try input.append(.video(sample)) }
        try writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(input.writtenFrameCount == 10)
        #expect(try FFprobe.frames(path).count == 10)
        // Each picture in the file is the frame given for its time.
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: .gray8)
        for sample in samples {
            let time = sample.presentationTime - start + MediaTime(value: 1, timescale: 1000)
            let picture = try #require(try output.copyPixelBuffer(forItemTime: time))
            #expect(ImageBufferTests.counter(in: picture, bytesPerPixel: 1) == Int(sample.sequence), "at \(time.seconds) s")
        }
    }

    /// MJPEG frames numbered 0 to 7, 320x240, 1/30 s apart.
    static func numberedJPEGs() throws -> [VideoSampleBuffer] {
        let encoder = try JPEGEncoder(width: 320, height: 240, quality: 80)
        return try (0..<8).map { number in
            let jpeg = try encoder.encode(try NumberedFrames.make(number, format: ImageFormat.jpeg.pixelFormat))
            return VideoSampleBuffer(storage: jpeg.withUnsafeBytes { SampleStorage(copying: $0) }, layout: .compressed(codecName: "mjpeg"),
                                     width: 320, height: 240, presentationTime: MediaTime(value: Int64(number), timescale: 30),
                                     duration: MediaTime(value: 1, timescale: 30), sequence: UInt64(number))
        }
    }

    /// A camera's JPEG cut short (a USB transfer that ended early) is refused
    /// as damaged: libavcodec would decode it without a word into a picture
    /// whose missing part is grey. The input goes on with the next frame,
    /// and the file holds exactly the whole frames.
    @Test func aJPEGCutShortIsRefusedAsDamagedAndNotWrittenGrey() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("cut.mp4")
        var samples = try Self.numberedJPEGs()
        let whole = samples[3]
        samples[3] = VideoSampleBuffer(storage: SampleStorage(copying: UnsafeRawBufferPointer(rebasing: whole.bytes.prefix(whole.bytes.count / 2))),
                                       layout: whole.layout, width: 320, height: 240, presentationTime: whole.presentationTime,
                                       duration: whole.duration, sequence: whole.sequence)
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: Self.h264)
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for sample in samples {
            do {
                try input.append(.video(sample))
                #expect(sample.sequence != 3, "the cut frame was taken")
            } catch {
                #expect(sample.sequence == 3, "\(error)")
                guard case .damagedSample(let reason) = error else { Issue.record("\(error)"); continue }
                #expect(reason.contains("cannot read"), "\(reason)")
            }
        }
        #expect(writer.status == .writing)
        try writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(input.writtenFrameCount == 7)
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 7)
        // The pictures are the whole frames, each at its own time.
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: .gray8)
        var numbers: [Int] = []
        for frame in frames {
            let picture = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: frame.time + 0.001, preferredTimescale: 90000)))
            numbers.append(NumberedFrames.read(picture))
            #expect(abs(frame.time - Double(numbers.last ?? 0) / 30) < 0.001, "frame \(numbers.last ?? 0) at \(frame.time) s")
        }
        #expect(numbers == [0, 1, 2, 4, 5, 6, 7])
    }

    @Test func aVideoSampleOnAnAudioInputThrows() throws {
        let scratch = try WriterScratchDirectory()
        let writer = try AssetWriter(outputPath: scratch.file("wrong.m4a"))
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 1)))
        try writer.add(input)
        try writer.startWriting()
        let sample = try #require(try ImageBufferTests.samples("YUYV", count: 1).first)
        try writer.startSession(atSourceTime: sample.presentationTime)
        #expect(throws: WriterError.self) { try input.append(.video(sample)) }
        writer.cancelWriting()
    }
}
