import Testing
@testable import CaptureKit

/// Specifiers of virtual devices, and what they name.
@Suite struct VirtualDeviceTests {
    @Test func specifiersNameTheirDevices() throws {
        #expect(try VirtualDevice.parse("test-pattern") == .testPattern)
        #expect(try VirtualDevice.parse("test-tone") == .testTone(frequency: 440))
        #expect(try VirtualDevice.parse("test-tone:880") == .testTone(frequency: 880))
        #expect(try VirtualDevice.parse("test-tone:261.63") == .testTone(frequency: 261.63))
        #expect(try VirtualDevice.parse("file:/tmp/clip.y4m") == .file(path: "/tmp/clip.y4m"))
        #expect(try VirtualDevice.parse("file:relative/clip.mjpeg") == .file(path: "relative/clip.mjpeg"))
        // The unique IDs list-devices prints name the same devices.
        #expect(try VirtualDevice.parse("virtual:test-pattern") == .testPattern)
        #expect(try VirtualDevice.parse("virtual:test-tone:1000") == .testTone(frequency: 1000))
        #expect(VirtualDevice(specifier: "test-tone:880") == .testTone(frequency: 880))
    }

    @Test func aToneTakesALevelAndADelayAfterCommas() throws {
        #expect(try VirtualDevice.parse("test-tone:1000,level=-20") == .testTone(frequency: 1000, level: -20))
        #expect(try VirtualDevice.parse("test-tone,level=-12.5dB") == .testTone(frequency: 440, level: -12.5))
        #expect(try VirtualDevice.parse("test-tone,level=0dBFS") == .testTone(frequency: 440, level: 0))
        #expect(try VirtualDevice.parse("test-tone,level=silence") == .testTone(frequency: 440, level: -.infinity))
        #expect(try VirtualDevice.parse("test-tone,level=-inf") == .testTone(frequency: 440, level: -.infinity))
        #expect(try VirtualDevice.parse("test-tone:500,delay=3") == .testTone(frequency: 500, delay: 3))
        #expect(try VirtualDevice.parse("test-tone,delay=500ms,level=-6") == .testTone(frequency: 440, delay: 0.5))
        #expect(try VirtualDevice.parse("test-tone,delay=2.5s") == .testTone(frequency: 440, delay: 2.5))
        #expect(try VirtualDevice.parse("virtual:test-tone:1000,level=-20,delay=1:30") == .testTone(frequency: 1000, level: -20, delay: 90))
        // The specifier names the tone again, leaving out what is the default.
        #expect(VirtualDevice.testTone(frequency: 1000, level: -20, delay: 2.5).specifier == "test-tone:1000,level=-20,delay=2.5")
        #expect(VirtualDevice.testTone(frequency: 440, level: -.infinity).specifier == "test-tone,level=silence")
        #expect(VirtualDevice.testTone(frequency: 440, level: -6, delay: 0).specifier == "test-tone")
        for device in [VirtualDevice.testTone(frequency: 1000, level: -20, delay: 2.5), .testTone(frequency: 440, level: -.infinity),
                       .testTone(frequency: 440, delay: 1)] {
            #expect(try VirtualDevice.parse(device.specifier) == device)
        }
        #expect(VirtualDevice.testTone(frequency: 1000, level: -20, delay: 3).localizedName == "Test tone (1000 Hz, -20 dBFS, after 3 s)")
        #expect(VirtualDevice.testTone(frequency: 440, level: -.infinity).localizedName == "Test tone (silence)")
        let source = try #require(VirtualDevice.testTone(frequency: 1000, level: -20, delay: 3).makeSource() as? TestToneSource)
        #expect(source.level == -20 && source.delay == 3 && source.path == "test-tone:1000,level=-20,delay=3")
    }

    @Test(arguments: ["/dev/video0", "video:0", "audio:1", "hw:Loopback,1", "default", "usb-Camera-video-index0", "test", "testpattern", ""])
    func otherSpecifiersAreNotVirtual(_ specifier: String) throws {
        #expect(try VirtualDevice.parse(specifier) == nil)
        #expect(VirtualDevice(specifier: specifier) == nil)
    }

    @Test(arguments: ["test-tone:abc", "test-tone:", "test-tone:0", "test-tone:-440", "test-tone:20001", "test-tone:nan", "test-tone:inf",
                      "test-pattern:1", "file:", "virtual:file:", "test-tone,level=3", "test-tone,level=loud", "test-tone,level=",
                      "test-tone,delay=-1", "test-tone,delay=soon", "test-tone,volume=-6", "test-tone,", "test-tone:440,level"])
    func malformedVirtualSpecifiersAreRefusedWithAReason(_ specifier: String) {
        #expect(VirtualDevice(specifier: specifier) == nil)
        do {
            _ = try VirtualDevice.parse(specifier)
            Issue.record("\(specifier) was accepted")
        } catch {
            guard case .unsupported(let device, let reason) = error else {
                Issue.record("\(specifier): \(error)")
                return
            }
            #expect(device == specifier)
            #expect(!reason.isEmpty)
            #expect(error.description.hasPrefix(specifier + ": "))
        }
    }

    @Test func anUnknownVirtualIDIsNoSuchDevice() {
        #expect(throws: CaptureError.self) { try VirtualDevice.parse("virtual:nothing") }
        do { _ = try VirtualDevice.parse("virtual:nothing") } catch {
            guard case .device(.noSuchDevice(let device, _)) = error else { Issue.record("\(error)"); return }
            #expect(device == "virtual:nothing")
        }
    }

    @Test func devicesDescribeThemselves() throws {
        #expect(VirtualDevice.testPattern.specifier == "test-pattern")
        #expect(VirtualDevice.testTone(frequency: 440).specifier == "test-tone")
        #expect(VirtualDevice.testTone(frequency: 880).specifier == "test-tone:880")
        #expect(VirtualDevice.testTone(frequency: 261.5).specifier == "test-tone:261.5")
        #expect(VirtualDevice.file(path: "a/b.y4m").specifier == "file:a/b.y4m")
        for device in [VirtualDevice.testPattern, .testTone(frequency: 880), .testTone(frequency: 261.5), .file(path: "x.mjpeg")] {
            #expect(try VirtualDevice.parse(device.specifier) == device)
            #expect(try VirtualDevice.parse(device.uniqueID) == device)
        }
        #expect(VirtualDevice.testPattern.uniqueID == "virtual:test-pattern")
        #expect(VirtualDevice.testTone(frequency: 440).uniqueID == "virtual:test-tone")
        #expect(VirtualDevice.testPattern.mediaType == .video)
        #expect(VirtualDevice.testTone(frequency: 440).mediaType == .audio)
        #expect(VirtualDevice.file(path: "x").mediaType == .video)
        #expect(VirtualDevice.testPattern.localizedName == "Test pattern")
        #expect(VirtualDevice.testTone(frequency: 880).localizedName == "Test tone (880 Hz)")
        #expect(VirtualDevice.file(path: "/data/clip.y4m").localizedName == "File clip.y4m")
        #expect(VirtualDevice.listed == [.testPattern, .testTone(frequency: 440)])
    }

    @Test func devicesMakeTheirSources() {
        let pattern = VirtualDevice.testPattern.makeSource(video: CaptureVideoRequest(width: 320, height: 240), realtime: false)
        #expect(pattern is TestPatternSource)
        #expect((pattern as? TestPatternSource)?.realtime == false)
        #expect((pattern as? TestPatternSource)?.request.width == 320)
        let tone = VirtualDevice.testTone(frequency: 880).makeSource(audio: CaptureAudioRequest(channels: 1))
        #expect((tone as? TestToneSource)?.frequency == 880)
        #expect(tone.path == "test-tone:880")
        #expect(tone.mediaType == .audio)
        let file = VirtualDevice.file(path: "/tmp/x.y4m").makeSource()
        #expect(file is FileCaptureSource)
        #expect(file.path == "/tmp/x.y4m")
    }
}
