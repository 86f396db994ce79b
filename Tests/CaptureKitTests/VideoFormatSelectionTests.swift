@testable import CaptureKit
import Testing

/// Format lists shaped like those real drivers report.
enum FormatLists {
    static func size(_ width: UInt32, _ height: UInt32) -> FrameDimensions { FrameDimensions(width: width, height: height) }

    static func rates(_ fps: UInt32...) -> FrameIntervalRange { .discrete(fps.map { Fraction(1, $0) }) }

    static func format(_ code: String, compressed: Bool = false, emulated: Bool = false, _ sizes: [FrameSizeRange]) -> VideoFormat {
        VideoFormat(fourcc: FourCC(code)!, description: code, isCompressed: compressed, isEmulated: emulated, sizes: sizes)
    }

    /// A USB webcam: YUYV fast only at small sizes, MJPG fast at every size.
    static let webcam: [VideoFormat] = [
        format("YUYV", [
            .discrete(size(640, 480), intervals: rates(30, 25, 15)),
            .discrete(size(320, 240), intervals: rates(30, 15)),
            .discrete(size(1280, 720), intervals: rates(10, 5)),
            .discrete(size(1920, 1080), intervals: rates(5)),
        ]),
        format("MJPG", compressed: true, [
            .discrete(size(640, 480), intervals: rates(30, 15)),
            .discrete(size(1280, 720), intervals: rates(30, 15)),
            .discrete(size(1920, 1080), intervals: rates(30, 15)),
        ]),
    ]

    /// vivid-like: several raw formats with the same discrete sizes.
    static let vivid: [VideoFormat] = {
        let sizes: [FrameSizeRange] = [
            .discrete(size(320, 180), intervals: rates(60, 50, 30, 25, 15)),
            .discrete(size(640, 360), intervals: rates(60, 50, 30, 25, 15)),
            .discrete(size(1280, 720), intervals: rates(30, 25, 15)),
            .discrete(size(1920, 1080), intervals: .discrete([Fraction(1001, 30000), Fraction(1, 25)])),
        ]
        return [format("YUYV", sizes), format("NV12", sizes), format("BA81", sizes), format("RGB3", sizes)]
    }()

    /// A sensor with a stepwise size range.
    static let stepwise: [VideoFormat] = [
        format("NV12", [.stepwise(min: size(16, 16), max: size(1920, 1080), step: size(16, 8),
                                  intervals: .stepwise(min: Fraction(1, 60), max: Fraction(1, 1), step: Fraction(1, 60)))]),
    ]
}

struct VideoFormatSelectionTests {
    typealias L = FormatLists

    func choose(_ request: CaptureVideoRequest, _ formats: [VideoFormat]) throws -> VideoFormatChoice {
        try VideoFormatSelection.choose(request, from: formats, device: "/dev/video0")
    }

    func reason(_ request: CaptureVideoRequest, _ formats: [VideoFormat]) -> String? {
        do {
            _ = try VideoFormatSelection.choose(request, from: formats, device: "/dev/video0")
            return nil
        } catch {
            guard case .unsupported(let device, let reason) = error else { return "unexpected \(error)" }
            #expect(device == "/dev/video0")
            return reason
        }
    }

    @Test func explicitSizePrefersUncompressedAndTakesTheFastestRate() throws {
        let choice = try choose(CaptureVideoRequest(width: 640, height: 480), L.webcam)
        #expect(choice.format.fourcc.description == "YUYV")
        #expect(choice.size == L.size(640, 480))
        #expect(choice.frameInterval == Fraction(1, 30))
        #expect(!choice.throughLibv4l2)
        #expect(choice.captureFourCC.description == "YUYV")
    }

    @Test func aRateOfferedOnlyCompressedTakesTheCompressedFormat() throws {
        let choice = try choose(CaptureVideoRequest(width: 1280, height: 720, framesPerSecond: 30), L.webcam)
        #expect(choice.format.fourcc.description == "MJPG")
        #expect(choice.frameInterval == Fraction(1, 30))
    }

    @Test func explicitPixelFormatIsKept() throws {
        let choice = try choose(CaptureVideoRequest(width: 640, height: 480, framesPerSecond: 15, pixelFormat: "MJPG"), L.webcam)
        #expect(choice.format.fourcc.description == "MJPG")
        #expect(choice.frameInterval == Fraction(1, 15))
    }

    @Test func ratesMatchWithinHalfAPercent() throws {
        let choice = try choose(CaptureVideoRequest(width: 1920, height: 1080, framesPerSecond: 29.97), L.vivid)
        #expect(choice.frameInterval == Fraction(1001, 30000))
        let near = try choose(CaptureVideoRequest(width: 1920, height: 1080, framesPerSecond: 30), L.vivid)
        #expect(near.frameInterval == Fraction(1001, 30000))
        #expect(reason(CaptureVideoRequest(width: 1920, height: 1080, framesPerSecond: 30.5), L.vivid) != nil)
    }

    @Test func sizeNotOfferedNamesTheNearest() {
        #expect(reason(CaptureVideoRequest(width: 1000, height: 700, pixelFormat: "YUYV"), L.webcam)
            == "1000x700 is not offered in YUYV; nearest: 1280x720 (also 640x480, 320x240, 1920x1080)")
        #expect(reason(CaptureVideoRequest(width: 1000, height: 700), L.webcam)
            == "1000x700 is not offered in YUYV or MJPG; nearest: 1280x720 (also 640x480, 320x240, 1920x1080)")
        #expect(reason(CaptureVideoRequest(width: 1000, height: 700), L.vivid)
            == "1000x700 is not offered in YUYV, NV12, RGB3 or BA81; nearest: 1280x720 (also 640x360, 320x180, 1920x1080)")
    }

    @Test func rateNotOfferedNamesTheOfferedRates() {
        #expect(reason(CaptureVideoRequest(width: 640, height: 480, framesPerSecond: 60, pixelFormat: "YUYV"), L.webcam)
            == "60 fps is not offered at 640x480 YUYV; offered: 30, 25, 15 fps")
        #expect(reason(CaptureVideoRequest(width: 640, height: 480, framesPerSecond: 60), L.webcam)
            == "60 fps is not offered at 640x480 in YUYV or MJPG; offered: 30, 25, 15 fps (YUYV); 30, 15 fps (MJPG)")
        #expect(reason(CaptureVideoRequest(preset: .high, framesPerSecond: 120), L.webcam)
            == "120 fps is not offered at any size; fastest: 30 fps at 1920x1080 (MJPG)")
    }

    @Test func missingPixelFormatListsTheOfferedOnes() {
        #expect(reason(CaptureVideoRequest(pixelFormat: "H264"), L.webcam) == "pixel format H264 is not offered; offered: YUYV, MJPG")
        let odd = [L.format("Y41P", [.discrete(L.size(640, 480), intervals: L.rates(30))])] + L.webcam
        #expect(reason(CaptureVideoRequest(pixelFormat: "Y41P"), odd)
            == "pixel format Y41P cannot be read (FFmpeg has no equivalent); readable: YUYV, MJPG")
        #expect(reason(CaptureVideoRequest(), []) == "the device offers no video formats")
        #expect(reason(CaptureVideoRequest(width: 640), L.webcam) == "a frame size needs both a width and a height (such as 1280x720)")
        #expect(reason(CaptureVideoRequest(width: 640, height: 480, framesPerSecond: 0), L.webcam)
            == "the frame rate must be a positive number of frames per second")
    }

    @Test func pixelFormatNamesMatchWithoutRegardToCase() throws {
        #expect(try choose(CaptureVideoRequest(pixelFormat: "mjpg"), L.webcam).format.fourcc.description == "MJPG")
    }

    @Test func highIsTheLargestSizeAtThirtyFramesPerSecond() throws {
        let choice = try choose(CaptureVideoRequest(preset: .high), L.webcam)
        #expect(choice.size == L.size(1920, 1080))
        #expect(choice.format.fourcc.description == "MJPG")
        #expect(choice.frameInterval == Fraction(1, 30))
        // Uncompressed only: no size reaches 30 fps above 640x480.
        let yuyv = try choose(CaptureVideoRequest(preset: .high, pixelFormat: "YUYV"), L.webcam)
        #expect(yuyv.size == L.size(640, 480))
        // No preset at all means high.
        #expect(try choose(CaptureVideoRequest(), L.webcam) == choice)
    }

    @Test func highFallsBackToTheLargestWhenNothingReachesThirty() throws {
        let slow = [L.format("YUYV", [.discrete(L.size(640, 480), intervals: L.rates(15)),
                                     .discrete(L.size(1280, 720), intervals: L.rates(10))])]
        let choice = try choose(CaptureVideoRequest(preset: .high), slow)
        #expect(choice.size == L.size(1280, 720))
        #expect(choice.frameInterval == Fraction(1, 10))
    }

    @Test func highAcceptsNTSCRates() throws {
        let choice = try choose(CaptureVideoRequest(preset: .high, pixelFormat: "YUYV"), L.vivid)
        #expect(choice.size == L.size(1920, 1080))
        #expect(choice.frameInterval == Fraction(1001, 30000))
    }

    @Test func mediumAndLowTakeTheNearestOfferedSize() throws {
        #expect(try choose(CaptureVideoRequest(preset: .medium), L.vivid).size == L.size(640, 360))
        #expect(try choose(CaptureVideoRequest(preset: .low), L.vivid).size == L.size(320, 180))
        #expect(try choose(CaptureVideoRequest(preset: .medium), L.webcam).size == L.size(640, 480))
        #expect(try choose(CaptureVideoRequest(preset: .low), L.webcam).format.fourcc.description == "YUYV")
        #expect(try choose(CaptureVideoRequest(preset: .medium), L.stepwise).size == L.size(640, 480))
    }

    @Test func photoIsTheLargestAtAnyRate() throws {
        let choice = try choose(CaptureVideoRequest(preset: .photo), L.webcam)
        #expect(choice.size == L.size(1920, 1080))
        #expect(choice.format.fourcc.description == "YUYV")
        #expect(choice.frameInterval == Fraction(1, 5))
    }

    @Test func fixedSizePresetsNeedTheirSize() throws {
        #expect(try choose(CaptureVideoRequest(preset: .hd1280x720), L.webcam).size == L.size(1280, 720))
        #expect(reason(CaptureVideoRequest(preset: .uhd3840x2160), L.webcam)
            == "3840x2160 is not offered in YUYV or MJPG; nearest: 1920x1080 (also 1280x720, 640x480, 320x240)")
        #expect(L.webcam.supports(preset: .hd1920x1080))
        #expect(!L.webcam.supports(preset: .uhd3840x2160))
        #expect(!L.vivid.supports(preset: .vga640x480))
        #expect(VideoFormatSelection.supports(preset: .high, in: L.vivid))
        #expect(!VideoFormatSelection.supports(preset: .high, in: []))
    }

    @Test func stepwiseRangesOfferEverySizeOnTheirStep() throws {
        let choice = try choose(CaptureVideoRequest(width: 640, height: 360, framesPerSecond: 20), L.stepwise)
        #expect(choice.size == L.size(640, 360))
        #expect(choice.frameInterval == Fraction(1, 20))
        #expect(reason(CaptureVideoRequest(width: 1000, height: 700), L.stepwise)
            == "1000x700 is not offered in NV12; nearest: 1008x704")
        #expect(try choose(CaptureVideoRequest(preset: .high), L.stepwise).size == L.size(1920, 1080))
        #expect(try choose(CaptureVideoRequest(width: 640, height: 360), L.stepwise).frameInterval == Fraction(1, 60))
        #expect(reason(CaptureVideoRequest(width: 640, height: 360, framesPerSecond: 100), L.stepwise)
            == "100 fps is not offered at 640x360 NV12; offered: 1 to 60 fps")
    }

    @Test func continuousRangesAndUnknownIntervals() throws {
        let formats = [L.format("GREY", [.continuous(min: L.size(1, 1), max: L.size(4096, 2160),
                                                     intervals: .continuous(min: Fraction(1, 120), max: Fraction(2, 1)))]),
                       L.format("Y16 ", [.discrete(L.size(640, 480), intervals: .unknown)])]
        let grey = try choose(CaptureVideoRequest(width: 1001, height: 333, framesPerSecond: 12.5), formats)
        #expect(grey.frameInterval == Fraction(2, 25))
        let y16 = try choose(CaptureVideoRequest(width: 640, height: 480, pixelFormat: "Y16"), formats)
        #expect(y16.frameInterval == nil)
        let asked = try choose(CaptureVideoRequest(width: 640, height: 480, framesPerSecond: 30, pixelFormat: "Y16"), formats)
        #expect(asked.frameInterval == Fraction(1, 30))
    }

    /// vivid offers Y16 and its big-endian twin; each spelling of the
    /// twin picks it, never the little-endian one, and it is read as gray16be.
    @Test(arguments: ["Y16 -BE", "'Y16 -BE'", "Y16-BE", "y16 -be"])
    func bigEndianFormatsAreChosenByTheirPrintedName(_ asked: String) throws {
        let big = FourCC(code: fourcc("Y16 ") | 1 << 31)
        let formats = [L.format("Y16 ", [.discrete(L.size(640, 480), intervals: L.rates(30))]),
                       VideoFormat(fourcc: big, description: "16-bit Greyscale BE", isCompressed: false, isEmulated: false,
                                   sizes: [.discrete(L.size(640, 480), intervals: L.rates(30))])]
        let choice = try choose(CaptureVideoRequest(pixelFormat: asked), formats)
        #expect(choice.format.fourcc == big)
        #expect(choice.captureFourCC == big)
        #expect(V4L2PixelMapping.pixelFormat(for: big)?.name == "gray16be")
        #expect(try choose(CaptureVideoRequest(pixelFormat: "Y16"), formats).format.fourcc.description == "Y16")
        #expect(reason(CaptureVideoRequest(pixelFormat: "Y12 -BE"), formats) == "pixel format Y12 -BE is not offered; offered: Y16, Y16 -BE")
    }

    @Test func bayerGoesThroughLibv4l2Conversion() throws {
        let bayer = [L.format("BA81", [.discrete(L.size(640, 480), intervals: L.rates(30))])]
        let choice = try choose(CaptureVideoRequest(), bayer)
        #expect(choice.format.fourcc.description == "BA81")
        #expect(choice.throughLibv4l2)
        #expect(choice.captureFourCC.description == "RGB3")
        // Offered beside readable formats, Bayer comes last.
        let mixed = try choose(CaptureVideoRequest(width: 640, height: 360), L.vivid)
        #expect(mixed.format.fourcc.description == "YUYV")
    }

    @Test func emulatedFormatsOpenThroughLibv4l2() throws {
        let formats = [L.format("MJPG", compressed: true, [.discrete(L.size(640, 480), intervals: L.rates(30))]),
                       L.format("RGB3", emulated: true, [.discrete(L.size(640, 480), intervals: L.rates(30))])]
        let choice = try choose(CaptureVideoRequest(useLibv4l2: true), formats)
        #expect(choice.format.fourcc.description == "RGB3")
        #expect(choice.throughLibv4l2)
        #expect(choice.captureFourCC.description == "RGB3")
        let plain = try choose(CaptureVideoRequest(pixelFormat: "MJPG"), formats)
        #expect(!plain.throughLibv4l2)
    }

    @Test func ratesFormatForMessages() {
        #expect(VideoFormatSelection.rate(30) == "30")
        #expect(VideoFormatSelection.rate(30000.0 / 1001) == "29.97")
        #expect(VideoFormatSelection.rate(7.5) == "7.5")
        #expect(Fraction(framesPerSecond: 59.94) == Fraction(1001, 60000))
        #expect(Fraction(framesPerSecond: 25) == Fraction(1, 25))
    }
}
