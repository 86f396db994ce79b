import Foundation
import Testing
@testable import CaptureKit

/// Files replayed as cameras: raw Y4M frames, compressed MJPEG and H.264, decoded VP9.
@Suite struct FileCaptureSourceTests {
    static let frameDuration = MediaTime(value: 1, timescale: 30)

    /// An AssetWriter file of `count` numbered 320x240 frames at 30 fps.
    static func written(_ path: String, codec: VideoCodec, count: Int, keyframes: Int? = nil) throws {
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: codec, width: 320, height: 240, quality: codec == .mjpeg ? 4 : 30, preset: codec == .h264 ? "ultrafast" : nil,
            maxKeyFrameInterval: keyframes, expectedFrameDuration: frameDuration)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<count { try input.append(NumberedFrames.make(number), presentationTime: frameDuration * Int64(number)) }
        try writer.finishWriting()
    }

    @Test func aY4MFileReplaysItsRawFramesAtItsRate() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("pattern.y4m")
        try Y4MFile.write(path, width: 160, height: 120, rate: "10:1", count: 12)
        let source = FileCaptureSource(path: path, realtime: false)
        try source.open()
        let format = try #require(source.videoFormat)
        #expect(format.width == 160 && format.height == 120)
        #expect(format.layout == .raw(.yuv420p, bytesPerRow: nil))
        #expect(format.fourcc == "YU12")
        #expect(format.frameDuration == MediaTime(value: 1, timescale: 10))
        #expect(source.modelID?.isEmpty == false)
        #expect(source.localizedName == "File pattern.y4m")
        var frames = [VideoSampleBuffer]()
        let end = captureSamples(source) { frames.append($0.videoSample!.detached()) }
        #expect(end == .endOfInput)
        #expect(frames.count == 12)
        let start = try #require(frames.first).presentationTime
        for (index, frame) in frames.enumerated() {
            #expect(frame.width == 160 && frame.height == 120)
            #expect(frame.bytes.count == 160 * 120 * 3 / 2)
            #expect(frame.layout == .raw(.yuv420p, bytesPerRow: nil))
            #expect(frame.sequence == UInt64(index))
            #expect(frame.presentationTime.timescale == MonotonicClock.timescale)
            #expect(frame.presentationTime.value - start.value == Int64(index) * 100_000_000)
            #expect(TestPatternRenderer.counter(in: frame) == index)
        }
        #expect(source.droppedByDevice == 0)
        source.close()
    }

    @Test func aStopEndsTheReplayAndARerunStartsOver() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("pattern.y4m")
        try Y4MFile.write(path, width: 128, height: 96, rate: "25:1", count: 10)
        let source = FileCaptureSource(path: path, realtime: false)
        try source.open()
        #expect(captureSamples(source, count: 3) == .stopped)
        source.close()
        try source.open()
        var counters = [Int?]()
        #expect(captureSamples(source) { counters.append(TestPatternRenderer.counter(in: $0.videoSample!)) } == .endOfInput)
        #expect(counters.count == 10)
        #expect(counters.first == 0)
    }

    @Test func y4mFrameParametersAreSkippedAndACutLastFrameEndsTheReplay() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("cut.y4m")
        // A last frame cut short, as a recorder killed mid-write leaves it.
        try Y4MFile.write(path, width: 128, height: 96, rate: "30:1", count: 5, header: { $0 % 2 == 1 ? "FRAME Ip XYSCSS=420JPEG" : "FRAME" },
                          trailer: Data("FRAME\n".utf8) + Data(repeating: 7, count: 128 * 96 / 2))
        let source = FileCaptureSource(path: path, realtime: false)
        try source.open()
        var counters = [Int?]()
        #expect(captureSamples(source) { counters.append(TestPatternRenderer.counter(in: $0.videoSample!)) } == .endOfInput)
        #expect(counters == [0, 1, 2, 3, 4])
    }

    @Test func aY4MFrameWithoutItsHeaderFailsTheReplayWithAReason() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("broken.y4m")
        try Y4MFile.write(path, width: 64, height: 48, rate: "30:1", count: 4, header: { $0 == 2 ? "FRAMX" : "FRAME" })
        let source = FileCaptureSource(path: path, realtime: false)
        try source.open()
        var count = 0
        let end = captureSamples(source) { _ in count += 1 }
        #expect(count == 2)
        guard case .failed(let error) = end else { Issue.record("expected a failure, got \(end)"); return }
        #expect(error.description.contains("FRAME"), "\(error)")
    }

    @Test func playedAsFastAsPossibleAFileWaitsForItsSamplesToComeBack() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("held.y4m")
        try Y4MFile.write(path, width: 64, height: 48, rate: "30:1", count: 10)
        let source = FileCaptureSource(path: path, realtime: false)
        try source.open()
        let held = HeldSamples()
        let stop = CaptureStopSignal()
        let done = DispatchSemaphore(value: 0)
        let capture = Thread {
            _ = source.run(stop: stop) { held.append($0) }
            done.signal()
        }
        capture.start()
        // Nothing comes back: the source stops at its limit and stays there.
        let deadline = Date().addingTimeInterval(10)
        while held.count < FileCaptureSource.lentLimit, Date() < deadline { usleep(1000) }
        usleep(200_000)
        #expect(held.count == FileCaptureSource.lentLimit)
        // Once they come back, the rest follows.
        held.releaseAll()
        while held.delivered < 10, Date() < deadline {
            held.releaseAll()
            usleep(1000)
        }
        #expect(held.delivered == 10)
        stop.raise()
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

    @Test func inRealTimeNoFrameComesBeforeItsStamp() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("fast.y4m")
        try Y4MFile.write(path, width: 64, height: 48, rate: "100:1", count: 8)
        let source = FileCaptureSource(path: path)
        try source.open()
        var early = 0, count = 0
        let end = captureSamples(source) { sample in
            count += 1
            if MonotonicClock.nowNanoseconds() < sample.presentationTime.value { early += 1 }
        }
        #expect(end == .endOfInput)
        #expect(count == 8)
        #expect(early == 0)
    }

    @Test func mjpegFramesComeCompressedFromMatroskaAndFromARawStream() throws {
        let scratch = try WriterScratchDirectory()
        let mkv = scratch.file("camera.mkv")
        try Self.written(mkv, codec: .mjpeg, count: 20)
        let source = FileCaptureSource(path: mkv, realtime: false)
        try source.open()
        #expect(source.videoFormat?.layout == .compressed(codecName: "mjpeg"))
        #expect(source.videoFormat?.fourcc == "MJPG")
        var frames = [VideoSampleBuffer]()
        #expect(captureSamples(source) { frames.append($0.videoSample!.detached()) } == .endOfInput)
        #expect(frames.count == 20)
        var stream = Data()
        for (index, frame) in frames.enumerated() {
            #expect(frame.layout == .compressed(codecName: "mjpeg"))
            #expect(frame.isKeyframe)
            #expect(frame.width == 320 && frame.height == 240)
            #expect(Array(frame.bytes.prefix(2)) == [0xFF, 0xD8], "frame \(index) is not a JPEG")
            // Matroska keeps times to the millisecond.
            #expect(abs(frame.presentationTime.value - frames[0].presentationTime.value - Int64(index) * 1_000_000_000 / 30) <= 1_000_000)
            stream.append(contentsOf: frame.bytes)
        }

        // The same JPEGs end to end: a raw MJPEG stream, which states no times and runs at 25 fps.
        let raw = scratch.file("camera.mjpeg")
        try stream.write(to: URL(fileURLWithPath: raw))
        let rawSource = FileCaptureSource(path: raw, realtime: false)
        try rawSource.open()
        #expect(rawSource.videoFormat?.layout == .compressed(codecName: "mjpeg"))
        #expect(rawSource.videoFormat?.frameDuration == MediaTime(value: 1, timescale: 25))
        var replayed = [VideoSampleBuffer]()
        #expect(captureSamples(rawSource) { replayed.append($0.videoSample!.detached()) } == .endOfInput)
        #expect(replayed.count == 20)
        for (index, frame) in replayed.enumerated() {
            #expect(frame.isKeyframe)
            #expect(frame.bytes.elementsEqual(frames[index].bytes), "frame \(index) changed")
            #expect(frame.presentationTime.value - replayed[0].presentationTime.value == Int64(index) * 40_000_000)
        }
    }

    @Test func h264FramesComeCompressedWithTheirKeyframes() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("encoded.mp4")
        try Self.written(path, codec: .h264, count: 10, keyframes: 5)
        let source = FileCaptureSource(path: path, request: CaptureVideoRequest(width: 320, height: 240, pixelFormat: "H264"), realtime: false)
        try source.open()
        #expect(source.videoFormat?.layout == .compressed(codecName: "h264"))
        var keyframes = [Int]()
        var count = 0
        #expect(captureSamples(source) { sample in
            if sample.videoSample!.isKeyframe { keyframes.append(count) }
            count += 1
        } == .endOfInput)
        #expect(count == 10)
        #expect(keyframes == [0, 5])
    }

    @Test func otherCodecsAreDecodedToRawFrames() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("clip.webm")
        try Self.written(path, codec: .vp9, count: 6)
        let source = FileCaptureSource(path: path, realtime: false)
        try source.open()
        #expect(source.videoFormat?.layout == .raw(.yuv420p, bytesPerRow: nil))
        var numbers = [Int]()
        var stamps = [Int64]()
        var layouts = Set<VideoSampleLayout>()
        var sizes = Set<Int>()
        let end = captureSamples(source) { sample in
            let frame = sample.videoSample!
            layouts.insert(frame.layout)
            sizes.insert(frame.bytes.count)
            numbers.append(numberedFrame(luma: frame))
            stamps.append(frame.presentationTime.value)
        }
        #expect(end == .endOfInput)
        #expect(layouts == [.raw(.yuv420p, bytesPerRow: nil)])
        #expect(sizes == [320 * 240 * 3 / 2])
        #expect(numbers == Array(0..<6))
        // WebM keeps times to the millisecond.
        for (index, stamp) in stamps.enumerated() {
            #expect(abs(stamp - stamps[0] - Int64(index) * 1_000_000_000 / 30) <= 1_000_000)
        }
    }

    @Test func aMissingFileIsNoSuchDevice() {
        let source = FileCaptureSource(path: "/nonexistent/clip.y4m")
        do {
            try source.open()
            Issue.record("opened a missing file")
        } catch {
            #expect(error == .device(.noSuchDevice("/nonexistent/clip.y4m", reason: "no such file to replay")))
            #expect(error.description == "/nonexistent/clip.y4m: no such file to replay")
        }
    }

    @Test func filesThatAreNotVideoAreRefusedWithAReason() throws {
        let scratch = try WriterScratchDirectory()
        let text = scratch.file("notes.txt")
        try Data("not a video at all\n".utf8).write(to: URL(fileURLWithPath: text))
        do {
            try FileCaptureSource(path: text).open()
            Issue.record("opened a text file")
        } catch {
            guard case .source(let device, let reason) = error else { Issue.record("\(error)"); return }
            #expect(device == text)
            #expect(reason.contains("not a media file"))
        }
        do {
            try FileCaptureSource(path: scratch.path).open()
            Issue.record("opened a directory")
        } catch {
            guard case .device(.notACaptureDevice(let device, _)) = error else { Issue.record("\(error)"); return }
            #expect(device == scratch.path)
        }
    }

    @Test(arguments: [CaptureVideoRequest(width: 320, height: 240), CaptureVideoRequest(pixelFormat: "YUYV"),
                      CaptureVideoRequest(framesPerSecond: 30), CaptureVideoRequest(preset: .hd1280x720)])
    func requestsForWhatTheFileLacksAreRefused(_ request: CaptureVideoRequest) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("pattern.y4m")
        try Y4MFile.write(path, width: 64, height: 48, rate: "10:1", count: 1)
        #expect(throws: CaptureError.self) { try FileCaptureSource(path: path, request: request).open() }
        try FileCaptureSource(path: path, request: CaptureVideoRequest(width: 64, height: 48, framesPerSecond: 10, pixelFormat: "yuv420p")).open()
    }
}

/// Samples a test holds on to while its source runs on another thread.
private final class HeldSamples: @unchecked Sendable {
    private let lock = NSLock()
    private var samples = [SampleBuffer]()
    private var total = 0

    func append(_ sample: SampleBuffer) { lock.withLock { samples.append(sample); total += 1 } }
    func releaseAll() { lock.withLock { samples.removeAll() } }
    /// Samples held now.
    var count: Int { lock.withLock { samples.count } }
    /// Samples delivered so far.
    var delivered: Int { lock.withLock { total } }
}
