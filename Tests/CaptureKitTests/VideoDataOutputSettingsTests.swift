@testable import CaptureKit
import Foundation
import Testing

/// VideoDataOutput.videoSettings: frames converted (and decoded) on the
/// output's thread to the asked pixel format and size.
@Suite struct VideoDataOutputSettingsTests {
    /// Keeps what it is told of the first `wanted` frames.
    final class Collector: VideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        // @unchecked: every stored property is guarded by `lock`.
        struct Seen {
            var format: PixelFormat?
            var width = 0, height = 0, planeCount = 0
            var layoutFormat: PixelFormat?
            var counter: Int?
            var sequence: UInt64 = 0
        }
        private let lock = NSLock()
        private(set) var seen: [Seen] = []
        let wanted: Int
        let done = DispatchSemaphore(value: 0)

        init(wanted: Int) { self.wanted = wanted }

        func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from input: CaptureInput) {
            var entry = Seen(sequence: sample.sequence)
            if case .raw(let format, _) = sample.layout { entry.layoutFormat = format }
            if let image = sample.imageBuffer {
                entry.format = image.pixelFormat
                entry.width = image.width
                entry.height = image.height
                entry.planeCount = image.planeCount
                if image.pixelFormat == .bgra {
                    // The counter in the green of BGRA (white digits on black).
                    entry.counter = image.withLockedBaseAddress { image -> Int? in
                        guard let base = image.baseAddress else { return nil }
                        let bytes = base.assumingMemoryBound(to: UInt8.self), stride = image.bytesPerRow
                        return CounterLayout(width: image.width, height: image.height).read(width: image.width, height: image.height) { x, y in
                            bytes[y * stride + x * 4 + 1]
                        }
                    }
                }
            }
            lock.lock()
            seen.append(entry)
            let finished = seen.count == wanted
            lock.unlock()
            if finished { done.signal() }
        }

        var frames: [Seen] { lock.lock(); defer { lock.unlock() }; return seen }
    }

    static func run(_ source: any CaptureSource, settings: VideoDataOutput.Settings?, wanted: Int = 4) throws -> [Collector.Seen] {
        let output = VideoDataOutput()
        output.videoSettings = settings
        let collector = Collector(wanted: wanted)
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "settings-test"))
        let session = CaptureSession()
        session.addInput(CaptureInput(source: source))
        session.addOutput(output)
        try session.startRunning()
        let arrived = collector.done.wait(timeout: .now() + 30) == .success
        session.stopRunning()
        #expect(arrived, "the delegate heard \(collector.frames.count) frames")
        #expect(output.failedConversionCount == 0)
        return collector.frames
    }

    @Test func bgraOfTheAskedSizeFromYUYV() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 320, height: 240, pixelFormat: "YUYV"), realtime: false)
        let frames = try Self.run(source, settings: VideoDataOutput.Settings(pixelFormat: .bgra, width: 160, height: 120))
        for frame in frames {
            #expect(frame.format == .bgra && frame.width == 160 && frame.height == 120 && frame.planeCount == 1)
        }
    }

    @Test func bgraOfTheCamerasSizeKeepsThePicture() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 320, height: 240, pixelFormat: "YUYV"), realtime: false)
        let frames = try Self.run(source, settings: VideoDataOutput.Settings(pixelFormat: .bgra))
        for frame in frames {
            #expect(frame.format == .bgra && frame.width == 320 && frame.height == 240)
            #expect(frame.counter == Int(frame.sequence), "the converted frame shows its own number")
        }
    }

    @Test func bgraOfTheAskedSizeFromMJPEG() throws {
        let scratch = try WriterScratchDirectory()
        let camera = scratch.file("camera.mjpeg")
        try AppendSampleBufferTests.mjpegFile(camera, count: 40)
        let source = FileCaptureSource(path: camera, realtime: true)
        let frames = try Self.run(source, settings: VideoDataOutput.Settings(pixelFormat: .bgra, width: 200, height: 150))
        for frame in frames {
            #expect(frame.format == .bgra && frame.width == 200 && frame.height == 150)
        }
    }

    @Test func planarFormatsComePacked() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 320, height: 240, pixelFormat: "YUYV"), realtime: false)
        let frames = try Self.run(source, settings: VideoDataOutput.Settings(pixelFormat: .nv12, width: 160, height: 120))
        for frame in frames {
            #expect(frame.format == .nv12 && frame.width == 160 && frame.height == 120 && frame.planeCount == 2)
        }
    }

    /// Settings it cannot produce are ignored, and the ones before stay.
    @Test func settingsItCannotProduceAreIgnored() throws {
        let output = VideoDataOutput()
        let bgra = VideoDataOutput.Settings(pixelFormat: .bgra, width: 320, height: 240)
        output.videoSettings = bgra
        let bayer = try #require(PixelFormat(name: "bayer_rggb8"))
        for wrong in [VideoDataOutput.Settings(pixelFormat: bayer), VideoDataOutput.Settings(pixelFormat: .nv12, width: 0, height: 240),
                      VideoDataOutput.Settings(pixelFormat: .nv12, width: 320, height: 20000)] {
            #expect(!output.canUseVideoSettings(wrong))
            output.videoSettings = wrong
            #expect(output.videoSettings == bgra)
        }
        #expect(output.canUseVideoSettings(VideoDataOutput.Settings(pixelFormat: .nv12)))
        output.videoSettings = nil
        #expect(output.videoSettings == nil)
    }

    @Test func withoutSettingsFramesComeAsTheCameraGivesThem() throws {
        let source = TestPatternSource(request: CaptureVideoRequest(width: 320, height: 240, pixelFormat: "YUYV"), realtime: false)
        let frames = try Self.run(source, settings: nil)
        for frame in frames { #expect(frame.format == .yuyv422 && frame.width == 320) }
        let output = VideoDataOutput()
        #expect(output.videoSettings == nil)
        #expect(output.availableVideoPixelFormatTypes.contains(.bgra))
        #expect(output.availableVideoPixelFormatTypes.contains(.nv12))
    }
}
