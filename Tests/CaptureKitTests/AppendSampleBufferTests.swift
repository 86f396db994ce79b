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
