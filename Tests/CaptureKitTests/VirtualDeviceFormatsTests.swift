import Foundation
import Testing
@testable import CaptureKit

/// What virtual devices say they offer, checked against what their sources
/// really take: every listed format, size edge and rate opens; just outside does not.
@Suite struct VirtualDeviceFormatsTests {
    /// Opens a test pattern for `request`; the error's reason when it is refused.
    static func opens(_ request: CaptureVideoRequest) -> Bool {
        let source = TestPatternSource(request: request, realtime: false)
        defer { source.close() }
        return (try? source.open()) != nil
    }

    @Test func theTestPatternListsTheFormatsItDraws() throws {
        let formats = try VirtualDevice.testPattern.videoFormats()
        #expect(formats.map(\.fourcc.description) == ["YU12", "NV12", "YUYV", "RGB3"])
        #expect(formats.map(\.description) == ["Planar YUV 4:2:0 (yuv420p)", "Y/UV 4:2:0 (nv12)", "YUYV 4:2:2 (yuyv422)", "24-bit RGB 8-8-8 (rgb24)"])
        #expect(formats.allSatisfy { !$0.isCompressed && !$0.isEmulated && $0.sizes.count == 1 })
        for format in formats {
            let range = format.sizes[0]
            let (low, high): (FrameDimensions, FrameDimensions)
            switch range {
            case .stepwise(let min, let max, let step, _):
                #expect(step == FrameDimensions(width: 2, height: 2))
                #expect(format.fourcc.description != "RGB3")
                (low, high) = (min, max)
            case .continuous(let min, let max, _):
                #expect(format.fourcc.description == "RGB3")
                (low, high) = (min, max)
            case .discrete:
                Issue.record("\(format.fourcc): a discrete size")
                continue
            }
            #expect(range.intervals == .continuous(min: Fraction(1, 1000), max: Fraction(10, 1)))
            // The listing is what the source takes: its edges open, beyond them not.
            for name in [format.fourcc.description, format.description.split(separator: "(").last!.dropLast().description] {
                for size in [low, high] {
                    #expect(Self.opens(CaptureVideoRequest(width: Int(size.width), height: Int(size.height), pixelFormat: name)), "\(name) \(size)")
                }
            }
            let name = format.fourcc.description
            #expect(!Self.opens(CaptureVideoRequest(width: Int(low.width) - 2, height: Int(low.height), pixelFormat: name)))
            #expect(!Self.opens(CaptureVideoRequest(width: Int(high.width), height: Int(high.height) + 2, pixelFormat: name)))
            let odd = Self.opens(CaptureVideoRequest(width: 321, height: 241, pixelFormat: name))
            #expect(odd == (name == "RGB3"), "\(name) at an odd size")
            #expect(range.contains(FrameDimensions(width: 321, height: 241)) == odd)
        }
        #expect(Self.opens(CaptureVideoRequest(framesPerSecond: 0.1)))
        #expect(Self.opens(CaptureVideoRequest(framesPerSecond: 1000)))
        #expect(!Self.opens(CaptureVideoRequest(framesPerSecond: 0.09)))
        #expect(!Self.opens(CaptureVideoRequest(framesPerSecond: 1001)))
    }

    @Test func theTestPatternIsActiveInItsDefaultFormat() throws {
        let active = try VirtualDevice.testPattern.activeVideoFormat()
        #expect(active.fourcc.description == "YU12")
        #expect(active.dimensions == FrameDimensions(width: 640, height: 480))
        #expect(active.frameInterval == Fraction(1, 30))
    }

    @Test(arguments: [(440.0, 8000 as UInt32), (20000, 40050)])
    func theToneListsTheRatesItCanBeSampledAt(_ frequency: Double, _ lowest: UInt32) throws {
        let device = VirtualDevice.testTone(frequency: frequency)
        let formats = try device.audioFormats()
        #expect(formats.count == 1)
        let format = try #require(formats.first)
        #expect(format.sampleFormat == "S16_LE")
        #expect(format.rateRange == lowest...192000)
        #expect(format.channelRange == 1...2)
        // 11025 Hz is not a whole number of 20 ms buffers; the others are.
        #expect(!format.standardRates.contains(11025))
        #expect(format.standardRates.allSatisfy { $0 >= lowest })
        #expect(format.standardRates.contains(48000))
        for rate in format.standardRates + [lowest, 192000] {
            for channels in [1, 2] {
                let source = TestToneSource(frequency: frequency, request: CaptureAudioRequest(sampleRate: Int(rate), channels: channels))
                #expect((try? source.open()) != nil, "\(rate) Hz, \(channels) channels")
                source.close()
            }
        }
        let below = TestToneSource(frequency: frequency, request: CaptureAudioRequest(sampleRate: Int(lowest) - 50))
        #expect((try? below.open()) == nil)
    }

    @Test func aToneIsNoCameraAndAPatternNoMicrophone() {
        #expect(throws: CaptureError.device(.notACaptureDevice("test-tone", reason: "not a camera; it is a virtual microphone"))) {
            try VirtualDevice.testTone(frequency: 440).videoFormats()
        }
        #expect(throws: CaptureError.self) { try VirtualDevice.testTone(frequency: 440).activeVideoFormat() }
        #expect(throws: CaptureError.device(.notACaptureDevice("test-pattern", reason: "not a microphone; it is a virtual camera"))) {
            try VirtualDevice.testPattern.audioFormats()
        }
    }

    @Test func aFileListsTheFormatItsFramesComeIn() throws {
        let scratch = try WriterScratchDirectory()
        let h264 = scratch.file("clip.mp4"), y4m = scratch.file("clip.y4m")
        try FileCaptureSourceTests.written(h264, codec: .h264, count: 3)
        try Y4MFile.write(y4m, width: 160, height: 120, rate: "10:1", count: 2)

        let compressed = try VirtualDevice.file(path: h264).videoFormats()
        #expect(compressed.count == 1)
        #expect(compressed[0].fourcc.description == "H264")
        #expect(compressed[0].isCompressed)
        #expect(compressed[0].description.hasPrefix("h264, as stored ("))
        #expect(compressed[0].sizes == [.discrete(FrameDimensions(width: 320, height: 240), intervals: .discrete([Fraction(1, 30)]))])
        let active = try VirtualDevice.file(path: h264).activeVideoFormat()
        #expect(active.fourcc.description == "H264")
        #expect(active.dimensions == FrameDimensions(width: 320, height: 240))
        #expect(active.frameInterval == Fraction(1, 30))

        let raw = try VirtualDevice.file(path: y4m).videoFormats()
        #expect(raw.map(\.fourcc.description) == ["YU12"])
        #expect(!raw[0].isCompressed)
        #expect(raw[0].description == "yuv420p (YUV4MPEG pipe)")
        #expect(raw[0].sizes == [.discrete(FrameDimensions(width: 160, height: 120), intervals: .discrete([Fraction(1, 10)]))])
    }

    @Test func aMissingFileIsNoSuchDevice() {
        #expect(throws: CaptureError.device(.noSuchDevice("/nonexistent/clip.mp4", reason: "no such file to replay"))) {
            try VirtualDevice.file(path: "/nonexistent/clip.mp4").videoFormats()
        }
    }

    @Test func namedDevicesResolveVirtualOnesFirst() throws {
        let discovery = DeviceDiscovery(v4l2: FakeV4L2(), alsa: FakeALSA(), devRoot: "/nonexistent", sysfsRoot: "/nonexistent")
        guard case .virtual(.testPattern) = try CaptureSourceFactory.device("virtual:test-pattern", discovery: discovery) else {
            Issue.record("not the test pattern")
            return
        }
        #expect(try CaptureSourceFactory.device("test-tone:880", expecting: .audio, discovery: discovery).mediaType == .audio)
        #expect(throws: CaptureError.device(.notACaptureDevice("test-tone", reason: "not a video capture device (it is a virtual microphone)"))) {
            try CaptureSourceFactory.device("test-tone", expecting: .video, discovery: discovery)
        }
        #expect(throws: CaptureError.device(.notACaptureDevice("file:x.mp4", reason: "not an audio capture device (it is a virtual camera)"))) {
            try CaptureSourceFactory.device("file:x.mp4", expecting: .audio, discovery: discovery)
        }
        #expect {
            try CaptureSourceFactory.device("frontcam", discovery: discovery)
        } throws: { error in
            if case .device(.noSuchDevice("frontcam", _)) = error as? CaptureError { return true }
            return false
        }
    }
}
