import Foundation
import Testing
@testable import CaptureKit

/// The test pattern camera: formats, frames, stamps and buffer reuse.
@Suite struct TestPatternSourceTests {
    @Test func defaultsTo640x480At30FramesPerSecondInYUV420() throws {
        let source = TestPatternSource()
        try source.open()
        let format = try #require(source.videoFormat)
        #expect(format.width == 640 && format.height == 480)
        #expect(format.layout == .raw(.yuv420p, bytesPerRow: nil))
        #expect(format.fourcc == "YU12")
        #expect(format.frameDuration == MediaTime(value: 1, timescale: 30))
        #expect(source.path == "test-pattern")
        #expect(source.mediaType == .video)
        #expect(source.audioFormat == nil)
        source.close()
        source.close()
    }

    @Test func sizesComeFromTheRequestOrItsPreset() throws {
        func size(_ request: CaptureVideoRequest) throws -> (Int, Int) {
            let source = TestPatternSource(request: request)
            try source.open()
            let format = try #require(source.videoFormat)
            return (format.width, format.height)
        }
        #expect(try size(CaptureVideoRequest(preset: .high)) == (1920, 1080))
        #expect(try size(CaptureVideoRequest(preset: .photo)) == (1920, 1080))
        #expect(try size(CaptureVideoRequest(preset: .low)) == (320, 240))
        #expect(try size(CaptureVideoRequest(preset: .hd1280x720)) == (1280, 720))
        #expect(try size(CaptureVideoRequest(preset: .high, width: 352, height: 288)) == (352, 288))
    }

    @Test(arguments: [CaptureVideoRequest(width: 320), CaptureVideoRequest(width: 321, height: 240),
                      CaptureVideoRequest(width: 8, height: 8), CaptureVideoRequest(framesPerSecond: 0),
                      CaptureVideoRequest(framesPerSecond: -.infinity), CaptureVideoRequest(pixelFormat: "bgra"),
                      CaptureVideoRequest(pixelFormat: "MJPG"), CaptureVideoRequest(pixelFormat: "no-such-format")])
    func impossibleRequestsAreRefusedWithAReason(_ request: CaptureVideoRequest) {
        let source = TestPatternSource(request: request)
        do {
            try source.open()
            Issue.record("\(request) was accepted")
        } catch {
            guard case .unsupported(let device, let reason) = error else { Issue.record("\(error)"); return }
            #expect(device == "test-pattern")
            #expect(!reason.isEmpty)
        }
    }

    @Test func framesAreNumberedStampedAndSizedAsTheFormatSays() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 320, height: 240, framesPerSecond: 30), realtime: false)
        try source.open()
        var frames = [VideoSampleBuffer]()
        let end = captureSamples(source, count: 8) { frames.append($0.videoSample!) }
        #expect(end == .stopped)
        #expect(frames.count == 8)
        let start = frames[0].presentationTime
        #expect(start.timescale == MonotonicClock.timescale)
        for (index, frame) in frames.enumerated() {
            #expect(frame.width == 320 && frame.height == 240)
            #expect(frame.layout == .raw(.yuv420p, bytesPerRow: nil))
            #expect(frame.bytes.count == 320 * 240 * 3 / 2)
            #expect(frame.sequence == UInt64(index))
            #expect(frame.isKeyframe)
            #expect(frame.duration == MediaTime(value: 1, timescale: 30))
            // Exactly start + n/30 s, to the nanosecond.
            #expect(frame.presentationTime.value - start.value == Int64(index) * 1_000_000_000 / 30)
            #expect(TestPatternRenderer.counter(in: frame) == index)
        }
        // Bars slide and the box moves: no two frames alike.
        for index in 1..<frames.count {
            #expect(!frames[index].bytes.elementsEqual(frames[index - 1].bytes))
        }
        // The source stamped on CLOCK_MONOTONIC, when it ran.
        #expect(abs(start.value - MonotonicClock.nowNanoseconds()) < 60_000_000_000)
    }

    @Test(arguments: [("nv12", PixelFormat.nv12, "NV12"), ("NV12", .nv12, "NV12"), ("YUYV", .yuyv422, "YUYV"), ("yuyv422", .yuyv422, "YUYV"),
                      ("RGB3", .rgb24, "RGB3"), ("rgb24", .rgb24, "RGB3"), ("YU12", .yuv420p, "YU12")])
    func everyPixelFormatCarriesAReadableCounter(_ name: String, _ format: PixelFormat, _ fourcc: String) throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 176, height: 144, pixelFormat: name), realtime: false)
        try source.open()
        #expect(source.videoFormat?.layout == .raw(format, bytesPerRow: nil))
        #expect(source.videoFormat?.fourcc == fourcc)
        var counters = [Int?]()
        captureSamples(source, count: 3) { sample in
            let frame = sample.videoSample!
            #expect(frame.bytes.count == format.imageSize(width: 176, height: 144))
            counters.append(TestPatternRenderer.counter(in: frame))
        }
        #expect(counters == [0, 1, 2])
    }

    @Test func largeFramesCountPastTheFirstDigits() throws {
        let renderer = try #require(TestPatternRenderer(width: 1920, height: 1080, format: .yuyv422))
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: renderer.frameSize, alignment: 64)
        defer { memory.deallocate() }
        for number: Int64 in [0, 9, 1234, 98_765_432, 123_456_789] {
            renderer.render(frame: number, into: memory)
            let storage = SampleStorage(lending: UnsafeRawBufferPointer(memory)) {}
            let frame = VideoSampleBuffer(storage: storage, layout: .raw(.yuyv422, bytesPerRow: nil), width: 1920, height: 1080,
                                          presentationTime: .zero, duration: nil, sequence: 0)
            #expect(TestPatternRenderer.counter(in: frame) == Int(number % 100_000_000))
        }
    }

    @Test func frameMemoryIsReusedOnceReleased() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120), realtime: false)
        try source.open()
        var last: UInt64 = 0
        captureSamples(source, count: 200) { last = $0.videoSample!.sequence }
        #expect(last == 199)
        #expect(source.allocatedBuffers <= 2)
        #expect(source.droppedByDevice == 0)
    }

    @Test func notRealTimeIsFasterThanTheFrameRate() throws {
        // 40 frames at 2 fps would take 20 s in real time.
        let source = TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120, framesPerSecond: 2), realtime: false)
        try source.open()
        let began = MonotonicClock.nowNanoseconds()
        var stamps = [Int64]()
        captureSamples(source, count: 40) { stamps.append($0.presentationTime.value) }
        #expect(MonotonicClock.nowNanoseconds() - began < 15_000_000_000)
        #expect(stamps.last! - stamps.first! == 39 * 500_000_000)
    }

    @Test func inRealTimeNoFrameComesBeforeItsStamp() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120, framesPerSecond: 200))
        try source.open()
        var early = 0
        captureSamples(source, count: 10) { sample in
            if MonotonicClock.nowNanoseconds() < sample.presentationTime.value { early += 1 }
        }
        #expect(early == 0)
    }

    @Test func aConsumerHoldingEveryBufferMakesARealTimeSourceLoseFrames() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 64, height: 48, framesPerSecond: 500))
        try source.open()
        let held = HeldFrames()
        let stop = CaptureStopSignal()
        let releaser = Thread {
            // Once frames were lost, let the held ones go.
            while source.droppedByDevice < 3, !stop.isRaised { usleep(1000) }
            held.removeAll()
        }
        releaser.start()
        var sequences = [UInt64]()
        let end = source.run(stop: stop) { sample in
            let frame = sample.videoSample!
            sequences.append(frame.sequence)
            if sequences.count <= TestPatternSource.poolLimit { held.append(frame) } else { stop.raise() }
        }
        #expect(end == .stopped)
        #expect(sequences.count == TestPatternSource.poolLimit + 1)
        #expect(Array(sequences.prefix(TestPatternSource.poolLimit)) == (0..<UInt64(TestPatternSource.poolLimit)).map { $0 })
        // The gap in the sequence is the frames lost.
        #expect(Int(sequences.last! - UInt64(TestPatternSource.poolLimit)) == source.droppedByDevice)
        #expect(source.droppedByDevice >= 3)
        #expect(source.allocatedBuffers == TestPatternSource.poolLimit)
    }
}

/// Frames a consumer holds on to, shared between threads.
private final class HeldFrames: @unchecked Sendable {
    private let lock = NSLock()
    private var frames = [VideoSampleBuffer]()

    func append(_ frame: VideoSampleBuffer) { lock.withLock { frames.append(frame) } }
    func removeAll() { lock.withLock { frames.removeAll() } }
}
