@testable import CaptureKit
import Glibc
import Testing

/// Format enumeration over every kind of frame size and interval reply.
struct FormatProbeTests {
    let tree: TemporaryTree
    let v4l2 = FakeV4L2()
    var dev: String { "\(tree.root)/dev" }

    init() throws {
        tree = try TemporaryTree()
        try tree.file("dev/video0")
    }

    func camera(_ recording: FakeNode.Recording) throws -> CaptureDevice {
        var recording = recording
        recording.capability = recording.capability ?? Caps.node(Caps.capture)
        v4l2.nodes["\(dev)/video0"] = recording
        return try DeviceDiscovery(v4l2: v4l2, alsa: FakeALSA(), devRoot: dev, sysfsRoot: "\(tree.root)/sys").resolve("video:0")
    }

    @Test func discreteSizesWithDiscreteIntervals() throws {
        let yuyv = fourcc("YUYV")
        let device = try camera(.init(
            formats: [V4L2FormatDescription(pixelFormat: yuyv, flags: 0, description: "YUYV 4:2:2")],
            sizes: [yuyv: [.discrete(width: 640, height: 480), .discrete(width: 1280, height: 720)]],
            intervals: ["YUYV 640x480": [.discrete(Fraction(1, 30)), .discrete(Fraction(1, 15))],
                        "YUYV 1280x720": [.discrete(Fraction(1001, 30000))]]))
        let formats = try device.videoFormats()
        #expect(formats.count == 1)
        #expect(formats[0].fourcc.description == "YUYV")
        #expect(formats[0].description == "YUYV 4:2:2")
        #expect(!formats[0].isCompressed && !formats[0].isEmulated)
        #expect(formats[0].sizes == [
            .discrete(FrameDimensions(width: 640, height: 480), intervals: .discrete([Fraction(1, 30), Fraction(1, 15)])),
            .discrete(FrameDimensions(width: 1280, height: 720), intervals: .discrete([Fraction(1001, 30000)])),
        ])
    }

    /// vivid offers V4L2_PIX_FMT_Y16_BE: the code with bit 31 set.
    @Test func bigEndianFormatsKeepTheirFlag() throws {
        let y16 = fourcc("Y16 "), y16be = fourcc("Y16 ") | 1 << 31
        let device = try camera(.init(
            formats: [V4L2FormatDescription(pixelFormat: y16, flags: 0, description: "16-bit Greyscale"),
                      V4L2FormatDescription(pixelFormat: y16be, flags: 0, description: "16-bit Greyscale BE")],
            sizes: [y16: [.discrete(width: 640, height: 480)], y16be: [.discrete(width: 640, height: 480)]],
            intervals: ["Y16 640x480": [.discrete(Fraction(1, 30))], "Y16 -BE 640x480": [.discrete(Fraction(1, 25))]]))
        let formats = try device.videoFormats()
        #expect(formats.map(\.fourcc.description) == ["Y16", "Y16 -BE"])
        #expect(formats[1].fourcc.code == y16be)
        #expect(formats[1].sizes == [.discrete(FrameDimensions(width: 640, height: 480), intervals: .discrete([Fraction(1, 25)]))])
    }

    @Test func stepwiseAndContinuousSizesAreRangesWithTheIntervalsOfTheirLargestSize() throws {
        let nv12 = fourcc("NV12"), grey = fourcc("GREY")
        let device = try camera(.init(
            formats: [V4L2FormatDescription(pixelFormat: nv12, flags: 0, description: "Y/UV 4:2:0"),
                      V4L2FormatDescription(pixelFormat: grey, flags: 0, description: "Greyscale")],
            sizes: [nv12: [.stepwise(min: FrameDimensions(width: 16, height: 16), max: FrameDimensions(width: 1920, height: 1080),
                                     step: FrameDimensions(width: 16, height: 8))],
                    grey: [.continuous(min: FrameDimensions(width: 1, height: 1), max: FrameDimensions(width: 4096, height: 2160))]],
            intervals: ["NV12 1920x1080": [.stepwise(min: Fraction(1, 60), max: Fraction(1, 1), step: Fraction(1, 60))],
                        "GREY 4096x2160": [.continuous(min: Fraction(1, 120), max: Fraction(2, 1))]]))
        let formats = try device.videoFormats()
        #expect(formats[0].sizes == [.stepwise(
            min: FrameDimensions(width: 16, height: 16), max: FrameDimensions(width: 1920, height: 1080),
            step: FrameDimensions(width: 16, height: 8),
            intervals: .stepwise(min: Fraction(1, 60), max: Fraction(1, 1), step: Fraction(1, 60)))])
        #expect(formats[1].sizes == [.continuous(
            min: FrameDimensions(width: 1, height: 1), max: FrameDimensions(width: 4096, height: 2160),
            intervals: .continuous(min: Fraction(1, 120), max: Fraction(2, 1)))])
        #expect(formats[0].sizes[0].contains(FrameDimensions(width: 640, height: 360)))
        #expect(!formats[0].sizes[0].contains(FrameDimensions(width: 641, height: 360)))
    }

    @Test func intervalsAreUnknownWhenTheDriverDoesNotEnumerateThem() throws {
        let mjpg = fourcc("MJPG")
        let device = try camera(.init(
            formats: [V4L2FormatDescription(pixelFormat: mjpg, flags: V4L2FormatDescription.compressedFlag, description: "Motion-JPEG")],
            sizes: [mjpg: [.discrete(width: 320, height: 240)]],
            intervalError: ENOTTY))
        let formats = try device.videoFormats()
        #expect(formats[0].isCompressed)
        #expect(formats[0].sizes == [.discrete(FrameDimensions(width: 320, height: 240), intervals: .unknown)])
    }

    @Test func aFailingEnumerationIsAnIOError() throws {
        let yuyv = fourcc("YUYV")
        let device = try camera(.init(
            formats: [V4L2FormatDescription(pixelFormat: yuyv, flags: 0, description: "YUYV")],
            sizes: [yuyv: [.discrete(width: 320, height: 240)]], intervalError: EIO))
        #expect {
            try device.videoFormats()
        } throws: { error in
            guard case .ioFailure(_, let cause) = error as? DeviceError else { return false }
            return cause.call == "ioctl(VIDIOC_ENUM_FRAMEINTERVALS)" && cause.errno == EIO
        }
    }

    @Test func libv4l2AddsEmulatedFormatsOnlyWhenAsked() throws {
        let ba81 = fourcc("BA81"), rgb3 = fourcc("RGB3")
        let device = try camera(.init(
            formats: [V4L2FormatDescription(pixelFormat: ba81, flags: 0, description: "8-bit Bayer BGBG/GRGR")],
            emulatedFormats: [V4L2FormatDescription(pixelFormat: rgb3, flags: V4L2FormatDescription.emulatedFlag, description: "RGB3")]))
        #expect(try device.videoFormats().map(\.fourcc.description) == ["BA81"])
        let converted = try device.videoFormats(includingConversions: true)
        #expect(converted.map(\.fourcc.description) == ["BA81", "RGB3"])
        #expect(converted.map(\.isEmulated) == [false, true])
        #expect(v4l2.openedWithLibv4l2 == ["\(dev)/video0"])
    }

    @Test func activeFormatAndFrameDurations() throws {
        let device = try camera(.init(
            current: V4L2CurrentFormat(pixelFormat: fourcc("YUYV"), width: 1280, height: 720),
            currentInterval: Fraction(1001, 30000)))
        let active = try device.activeVideoFormat()
        #expect(active.fourcc.description == "YUYV")
        #expect(active.dimensions == FrameDimensions(width: 1280, height: 720))
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1001, timescale: 30000))
        #expect(device.activeVideoMaxFrameDuration == MediaTime(value: 1001, timescale: 30000))
    }

    /// The format capture uses is chosen on the device, under its
    /// configuration lock (taken as an advisory lock other processes see).
    @Test func activeFormatIsChosenUnderTheConfigurationLock() throws {
        let device = try camera(.init(
            current: V4L2CurrentFormat(pixelFormat: fourcc("YUYV"), width: 1280, height: 720),
            currentInterval: Fraction(1, 30)))
        let chosen = ActiveVideoFormat(fourcc: FourCC(parsing: "MJPG")!, dimensions: FrameDimensions(width: 640, height: 480))
        device.activeFormat = chosen
        #expect(device.activeFormat == nil, "changed without the lock")
        try device.lockForConfiguration()
        #expect(device.isLockedForConfiguration)
        device.activeFormat = chosen
        device.activeVideoMinFrameDuration = MediaTime(value: 1, timescale: 15)
        device.unlockForConfiguration()
        #expect(!device.isLockedForConfiguration)
        #expect(device.activeFormat == chosen)
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 15))
        let input = try CaptureDeviceInput(device: device)
        let source = try #require(input.source as? V4L2CaptureSource)
        #expect(source.request.width == 640 && source.request.height == 480)
        #expect(source.request.pixelFormat == "MJPG")
        #expect(source.request.framesPerSecond == 15)
    }

    @Test func audioFormatsOfACameraAreRefused() throws {
        let device = try camera(.init())
        #expect(throws: DeviceError.self) { try device.audioFormats() }
    }
}

struct FourCCTests {
    @Test func roundTripsAndMarksBigEndian() {
        #expect(FourCC("YUYV")?.code == 0x5659_5559)
        #expect(FourCC(code: 0x5659_5559).description == "YUYV")
        #expect(FourCC(code: FourCC("Y16 ")!.code).description == "Y16")
        #expect(FourCC(code: FourCC("Y16 ")!.code | 1 << 31).description == "Y16 -BE")
        #expect(FourCC("TOOLONG") == nil)
        #expect(FourCC("YÜ") == nil)
    }

    /// v4l2-ctl prints a big-endian code's four characters, padding kept, then -BE.
    @Test func bigEndianCodesPrintAsV4l2CtlPrintsThem() {
        let y16be = FourCC(code: 0x2036_3159 | 1 << 31)
        #expect(y16be.isBigEndian)
        #expect(y16be.description == "Y16 -BE")
        #expect(!FourCC(code: 0x2036_3159).isBigEndian)
    }

    @Test(arguments: ["Y16 -BE", "'Y16 -BE'", "\"Y16 -BE\"", "Y16-BE", "Y16 -be"])
    func parsingReadsTheBigEndianSpellings(_ text: String) {
        #expect(FourCC(parsing: text) == FourCC(code: 0x2036_3159 | 1 << 31))
    }

    @Test func parsingPadsShortCodesAndRefusesOthers() {
        #expect(FourCC(parsing: "Y16") == FourCC("Y16 "))
        #expect(FourCC(parsing: "YUYV") == FourCC("YUYV"))
        #expect(FourCC(parsing: "'YUYV'") == FourCC("YUYV"))
        #expect(FourCC(parsing: "Y16") != FourCC(parsing: "Y16 -BE"))
        for bad in ["", "-BE", "TOOLONG", " Y16", "''", "YÜ", "ABCDE-BE"] {
            #expect(FourCC(parsing: bad) == nil, "\(bad)")
        }
        // What description prints, parsing reads back.
        for code: UInt32 in [0x5659_5559, 0x2036_3159, 0x2036_3159 | 1 << 31] {
            #expect(FourCC(parsing: FourCC(code: code).description) == FourCC(code: code))
        }
    }
}

struct AccessCheckTests {
    @Test func namesTheMissingGroupAndHowToJoinIt() {
        let text = AccessCheck.explanation(mode: 0o020660, owner: "root", group: "video", groupID: 44,
                                           user: "ann", userIsOwner: false, userGroups: [1000])
        #expect(text == "permission denied (crw-rw---- root:video): user 'ann' is not in group 'video'; "
            + "add it with 'sudo usermod -aG video ann' and log in again, or add a udev rule granting access")
    }

    @Test func aMemberStillDeniedIsToldToAskForAccess() {
        let text = AccessCheck.explanation(mode: 0o020600, owner: "root", group: "video", groupID: 44,
                                           user: "ann", userIsOwner: false, userGroups: [44])
        #expect(text.hasPrefix("permission denied (crw------- root:video);"))
        #expect(!text.contains("usermod"))
    }
}
