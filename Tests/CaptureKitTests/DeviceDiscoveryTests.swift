@testable import CaptureKit
import Glibc
import Testing

/// Discovery over a fake /dev, a fake sysfs and replayed V4L2/ALSA replies.
struct DeviceDiscoveryTests {
    let tree: TemporaryTree
    let v4l2 = FakeV4L2()
    var alsa = FakeALSA()

    init() throws {
        tree = try TemporaryTree()
    }

    var dev: String { "\(tree.root)/dev" }

    func discovery() -> DeviceDiscovery {
        DeviceDiscovery(v4l2: v4l2, alsa: alsa, devRoot: dev, sysfsRoot: "\(tree.root)/sys")
    }

    /// Adds a node file and its recorded replies.
    func node(_ name: String, _ recording: FakeNode.Recording) throws {
        try tree.file("dev/\(name)")
        v4l2.nodes["\(dev)/\(name)"] = recording
    }

    @Test func listsOnlyNodesThatCaptureVideo() throws {
        try node("video0", .init(capability: Caps.node(Caps.capture)))
        try node("video1", .init(capability: Caps.node(Caps.output)))
        try node("video2", .init(capability: Caps.node(Caps.metaCapture)))
        try node("video10", .init(capability: Caps.node(Caps.captureMultiplanar, card: "Planar")))
        try tree.file("dev/null")
        try node("video3", .init(capability: nil))  // answers no QUERYCAP
        let cameras = discovery().devices(for: .video)
        #expect(cameras.map(\.path) == ["\(dev)/video0", "\(dev)/video10"])
        #expect(cameras.allSatisfy { $0.mediaType == .video })
    }

    @Test func nodesAreListedInNumericOrder() throws {
        for number in [10, 2, 1] {
            try node("video\(number)", .init(capability: Caps.node(Caps.capture, bus: "usb-\(number)")))
        }
        #expect(discovery().devices(for: .video).map(\.path) == ["\(dev)/video1", "\(dev)/video2", "\(dev)/video10"])
    }

    @Test func capabilitiesWithoutDeviceCapsUseTheDeviceWord() throws {
        try node("video0", .init(capability: V4L2Capability(driver: "old", card: "Old", busInfo: "pci", capabilities: Caps.capture, deviceCaps: 0)))
        #expect(discovery().devices(for: .video).count == 1)
    }

    @Test func uniqueIDPrefersTheByIDLink() throws {
        try node("video0", .init(capability: Caps.node(Caps.capture)))
        try node("video2", .init(capability: Caps.node(Caps.capture, card: "Other", bus: "usb-2")))
        try tree.link("dev/v4l/by-id/usb-Acme_Cam_1234-video-index0", to: "../../video0")
        let cameras = discovery().devices(for: .video)
        #expect(cameras[0].uniqueID == "usb-Acme_Cam_1234-video-index0")
        #expect(cameras[1].uniqueID == "v4l2:usb-2:Other:0")
    }

    @Test func derivedUniqueIDsTellNodesOfOneDeviceApartAndAreShellSafe() throws {
        try node("video0", .init(capability: Caps.node(Caps.capture, card: "HD Cam: Front", bus: "usb-0000:00:14.0-1")))
        try node("video1", .init(capability: Caps.node(Caps.capture, card: "HD Cam: Front", bus: "usb-0000:00:14.0-1")))
        let ids = discovery().devices(for: .video).map(\.uniqueID)
        #expect(ids == ["v4l2:usb-0000_00_14.0-1:HD_Cam__Front:0", "v4l2:usb-0000_00_14.0-1:HD_Cam__Front:1"])
        // The same system discovered again gives the same IDs.
        #expect(discovery().devices(for: .video).map(\.uniqueID) == ids)
    }

    @Test(arguments: [(Int64(0), DevicePosition.front), (1, .back), (2, .external), (7, .unspecified)])
    func positionComesFromCameraOrientation(value: Int64, position: DevicePosition) throws {
        let orientation = V4L2ControlDescription(id: V4L2ControlID.cameraOrientation, type: 3, name: "Camera Orientation",
                                                 minimum: 0, maximum: 2, step: 1, defaultValue: 0, flags: 0x0004)
        try node("video0", .init(capability: Caps.node(Caps.capture), controls: [V4L2ControlID.cameraOrientation: (orientation, value)]))
        #expect(discovery().devices(for: .video).first?.position == position)
    }

    @Test func positionIsUnspecifiedWithoutTheControl() throws {
        try node("video0", .init(capability: Caps.node(Caps.capture)))
        #expect(discovery().devices(for: .video).first?.position == .unspecified)
    }

    @Test func torchAndFlashFromFlashControls() throws {
        let ledMode = V4L2ControlDescription(id: V4L2ControlID.flashLEDMode, type: 3, name: "LED Mode", minimum: 0, maximum: 2, step: 1, defaultValue: 0, flags: 0)
        try node("video0", .init(capability: Caps.node(Caps.capture), controls: [V4L2ControlID.flashLEDMode: (ledMode, Int64(0))]))
        let strobe = V4L2ControlDescription(id: V4L2ControlID.flashStrobe, type: 4, name: "Strobe", minimum: 0, maximum: 0, step: 0, defaultValue: 0, flags: 0)
        try node("video1", .init(capability: Caps.node(Caps.capture, bus: "b"), controls: [V4L2ControlID.flashStrobe: (strobe, Int64(0))]))
        try node("video2", .init(capability: Caps.node(Caps.capture, bus: "c")))
        let cameras = discovery().devices(for: .video)
        #expect(cameras.map(\.hasTorch) == [true, false, false])
        #expect(cameras.map(\.hasFlash) == [true, true, false])
    }

    @Test func modelIDComesFromTheUSBAncestorInSysfs() throws {
        try node("video0", .init(capability: Caps.node(Caps.capture)))
        try node("video1", .init(capability: Caps.node(Caps.capture, bus: "platform:vivid-000")))
        try tree.file("sys/devices/pci0000:00/usb1/1-1/idVendor", "046d\n")
        try tree.file("sys/devices/pci0000:00/usb1/1-1/idProduct", "0825\n")
        try tree.file("sys/devices/pci0000:00/usb1/1-1/1-1:1.0/bInterfaceClass", "0e\n")
        try tree.link("sys/class/video4linux/video0/device", to: "../../../devices/pci0000:00/usb1/1-1/1-1:1.0")
        try tree.file("sys/devices/platform/vivid.0/modalias", "platform:vivid\n")
        try tree.link("sys/class/video4linux/video1/device", to: "../../../devices/platform/vivid.0")
        let cameras = discovery().devices(for: .video)
        #expect(cameras[0].modelID == "046d:0825")
        #expect(cameras[1].modelID == nil)
    }

    @Test func aNodeThisUserCannotOpenIsListedAsDenied() throws {
        try node("video0", .init(capability: Caps.node(Caps.capture)))
        v4l2.openErrors["\(dev)/video0"] = EACCES
        try tree.file("sys/class/video4linux/video0/name", "Locked Cam\n")
        let cameras = discovery().devices(for: .video)
        #expect(cameras.count == 1)
        #expect(cameras[0].localizedName == "Locked Cam")
        guard case .denied(let reason) = cameras[0].access else {
            Issue.record("expected denied access, got \(cameras[0].access)")
            return
        }
        #expect(reason.contains("permission denied"))
    }

    @Test func listsALSACapturePCMsAndDefault() {
        var fake = FakeALSA()
        fake.devices = [
            ALSACaptureDescription(cardIndex: 0, cardID: "Loopback", cardName: "Loopback", driver: "Loopback", device: 0, pcmName: "Loopback PCM", subdevices: 8),
            ALSACaptureDescription(cardIndex: 0, cardID: "Loopback", cardName: "Loopback", driver: "Loopback", device: 1, pcmName: "Loopback PCM", subdevices: 8),
            ALSACaptureDescription(cardIndex: 1, cardID: "Dummy", cardName: "Dummy 1", driver: "Dummy", device: 0, pcmName: "Dummy PCM", subdevices: 8),
        ]
        let microphones = DeviceDiscovery(v4l2: v4l2, alsa: fake, devRoot: dev, sysfsRoot: "\(tree.root)/sys").devices(for: .audio)
        #expect(microphones.map(\.path) == ["hw:Loopback,0", "hw:Loopback,1", "hw:Dummy,0", "default"])
        #expect(microphones.map(\.uniqueID) == ["alsa:Loopback:0", "alsa:Loopback:1", "alsa:Dummy:0", "alsa:default"])
        #expect(microphones[2].localizedName == "Dummy 1: Dummy PCM")
        #expect(microphones.allSatisfy { $0.mediaType == .audio })
    }

    @Test func videoDevicesComeBeforeAudioDevices() throws {
        try node("video0", .init(capability: Caps.node(Caps.capture)))
        #expect(discovery().devices().map(\.mediaType) == [.video, .audio])
        #expect(discovery().defaultDevice(for: .audio)?.path == "default")
        #expect(discovery().defaultDevice(for: .video)?.path == "\(dev)/video0")
    }
}
