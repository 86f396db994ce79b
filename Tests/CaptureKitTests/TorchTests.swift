@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// Torch and flash: V4L2 flash controls, flash sub-devices, LED class devices.
struct TorchTests {
    let tree: TemporaryTree

    init() throws {
        tree = try TemporaryTree()
    }

    private var sysfs: String { "\(tree.root)/sys" }

    private func v4l2Torch(_ camera: FakeCamera) throws -> (Torch, DeviceControls) {
        let controls = try openControls(camera)
        let light = try #require(V4L2Torch(controls: controls, isSubdevice: false))
        let torch = Torch(backend: light)
        try torch.lockForConfiguration()
        return (torch, controls)
    }

    private func led(_ name: String, brightness: Int = 0, max: Int = 255, flash: Bool = false, fault: String? = nil) throws {
        try tree.file("sys/class/leds/\(name)/brightness", "\(brightness)\n")
        try tree.file("sys/class/leds/\(name)/max_brightness", "\(max)\n")
        if flash { try tree.file("sys/class/leds/\(name)/flash_strobe", "0\n") }
        if let fault { try tree.file("sys/class/leds/\(name)/flash_fault", fault + "\n") }
    }

    private func read(_ relative: String) throws -> String {
        try String(contentsOfFile: "\(tree.root)/\(relative)", encoding: .utf8)
    }

    // MARK: V4L2 flash controls

    @Test func flashControlsGiveATorchAndAFlash() throws {
        let (torch, _) = try v4l2Torch(FakeCameras.flash())
        #expect(torch.hasTorch)
        #expect(torch.hasFlash)
        #expect(torch.isTorchModeSupported(.on))
        #expect(torch.isTorchModeSupported(.off))
        #expect(!torch.isTorchModeSupported(.auto))
        let status = try torch.status()
        #expect(!status.isTorchActive)
        #expect(status.torchLevel == 0)
        #expect(status.isTorchAvailable)
        #expect(status.maxAvailableTorchLevel == 1)
    }

    @Test func aLevelSetsTheTorchIntensityThenTheTorchMode() throws {
        let camera = FakeCameras.flash()
        let (torch, _) = try v4l2Torch(camera)
        let level = try torch.setTorchModeOn(level: .level(0.5))
        #expect(camera.log.map(\.id) == [ControlID.flashTorchIntensity, ControlID.flashLEDMode])
        #expect(camera.value(ControlID.flashTorchIntensity) == 125_000)
        #expect(camera.value(ControlID.flashLEDMode) == 2)
        #expect(level == 0.5)
        #expect(try torch.isTorchActive())
        try torch.setTorchMode(.off)
        #expect(camera.value(ControlID.flashLEDMode) == 0)
        #expect(try torch.torchLevel() == 0)
    }

    @Test func theLowestLevelStillLightsTheLED() throws {
        let camera = FakeCameras.flash()
        let (torch, _) = try v4l2Torch(camera)
        try torch.setTorchModeOn(level: .level(0.001))
        #expect(camera.value(ControlID.flashTorchIntensity) == 2500)
    }

    @Test func maxTakesWhatIsAvailable() throws {
        let camera = FakeCameras.flash()
        let (torch, _) = try v4l2Torch(camera)
        #expect(try torch.setTorchModeOn(level: .maximumAvailable) == 1)
        #expect(camera.value(ControlID.flashTorchIntensity) == 250_000)
    }

    @Test(arguments: [1.5, -0.1, 0.0, Double.nan])
    func levelsOutside0To1AreRefused(level: Double) throws {
        let camera = FakeCameras.flash()
        let (torch, _) = try v4l2Torch(camera)
        #expect(throws: TorchError.self) { try torch.setTorchModeOn(level: .level(level)) }
        #expect(camera.log.isEmpty)
    }

    @Test func aFaultLeavesNothingAvailableAndTheTorchUnchanged() throws {
        // V4L2_FLASH_FAULT_OVER_TEMPERATURE.
        let camera = FakeCameras.flash(faults: 0x004)
        let (torch, _) = try v4l2Torch(camera)
        let status = try torch.status()
        #expect(!status.isTorchAvailable)
        #expect(status.faults == ["over-temperature"])
        #expect {
            try torch.setTorchModeOn(level: .level(0.8))
        } throws: { error in
            "\(error)" == "torch level 0.8 is above the 0.0 currently available (over-temperature); the torch was not changed"
        }
        #expect(throws: TorchError.self) { try torch.setTorchModeOn(level: .maximumAvailable) }
        #expect(camera.log.isEmpty)
    }

    @Test func aNonBlockingFaultIsReportedButTheTorchWorks() throws {
        // V4L2_FLASH_FAULT_INPUT_VOLTAGE limits the flash, not the torch.
        let camera = FakeCameras.flash(faults: 0x080)
        let (torch, _) = try v4l2Torch(camera)
        #expect(try torch.status().faults == ["input-voltage"])
        try torch.setTorchModeOn(level: .level(1))
        #expect(camera.value(ControlID.flashLEDMode) == 2)
    }

    @Test func theFlashStrobesBySoftware() throws {
        let camera = FakeCameras.flash()
        let (torch, _) = try v4l2Torch(camera)
        try torch.strobeFlash()
        #expect(camera.log.map(\.id) == [ControlID.flashLEDMode, ControlID.flashStrobeSource, ControlID.flashStrobe])
        #expect(camera.value(ControlID.flashLEDMode) == 1)
        #expect(camera.value(ControlID.flashStrobeSource) == 0)
    }

    @Test func v4l2TorchChangesNeedTheConfigurationLock() throws {
        let controls = try openControls(FakeCameras.flash())
        let torch = Torch(backend: try #require(V4L2Torch(controls: controls, isSubdevice: false)))
        #expect(throws: TorchError.control(.notLockedForConfiguration(device: "/dev/fake-video0"))) {
            try torch.setTorchModeOn(level: .level(1))
        }
    }

    @Test func aCameraWithoutFlashControlsHasNoV4L2Light() throws {
        #expect(V4L2Torch(controls: try openControls(FakeCameras.vivid()), isSubdevice: false) == nil)
    }

    // MARK: Finding the light

    @Test func discoveryFindsTheFlashControlsOnTheCameraNode() throws {
        let interface = FakeControlV4L2(["/dev/video0": FakeCameras.flash()])
        let torch = try TorchDiscovery(v4l2: interface, mediaController: FakeMediaController(), devRoot: "\(tree.root)/dev", sysfsRoot: sysfs)
            .torch(forDevice: "/dev/video0")
        #expect(torch.source == .v4l2(path: "/dev/video0", isSubdevice: false))
    }

    @Test func discoveryFindsAFlashSubdeviceThroughTheMediaGraph() throws {
        try tree.file("dev/media0")
        try tree.file("sys/dev/char/81:5/uevent", "MAJOR=81\nMINOR=5\nDEVNAME=v4l-subdev2\n")
        let interface = FakeControlV4L2(["/dev/video0": FakeCameras.vivid(), "\(tree.root)/dev/v4l-subdev2": FakeCameras.flash()])
        var media = FakeMediaController()
        media.numbers["/dev/video0"] = DeviceNumber(major: 81, minor: 0)
        media.topologies["\(tree.root)/dev/media0"] = MediaTopology(
            entities: [.init(id: 1, name: "sensor", function: 0x0002_0001), .init(id: 2, name: "adp1653 flash", function: MediaTopology.flashFunction),
                       .init(id: 3, name: "video", function: 0x0001_0001)],
            interfaces: [.init(id: 10, type: 0x200, deviceNumber: DeviceNumber(major: 81, minor: 0)),
                         .init(id: 11, type: MediaTopology.subdeviceInterface, deviceNumber: DeviceNumber(major: 81, minor: 5))],
            links: [.init(interfaceID: 10, entityID: 3), .init(interfaceID: 11, entityID: 2)])
        let discovery = TorchDiscovery(v4l2: interface, mediaController: media, devRoot: "\(tree.root)/dev", sysfsRoot: sysfs)
        let torch = try discovery.torch(forDevice: "/dev/video0")
        #expect(torch.source == .v4l2(path: "\(tree.root)/dev/v4l-subdev2", isSubdevice: true))
        let lights = discovery.lights(forDevice: "/dev/video0", node: try interface.open("/dev/video0", options: V4L2OpenOptions()))
        #expect(lights.hasTorch && lights.hasFlash)
    }

    @Test func aMediaGraphWithoutTheCameraGivesNoSubdevice() {
        let topology = MediaTopology(
            entities: [.init(id: 2, name: "flash", function: MediaTopology.flashFunction)],
            interfaces: [.init(id: 11, type: MediaTopology.subdeviceInterface, deviceNumber: DeviceNumber(major: 81, minor: 5))],
            links: [.init(interfaceID: 11, entityID: 2)])
        #expect(topology.flashSubdevices(forVideoNode: DeviceNumber(major: 81, minor: 0)).isEmpty)
    }

    @Test func withoutV4L2FlashAnLEDClassTorchServesTheCamera() throws {
        try led("white:flash", flash: true)
        try led("white:torch")
        try led("input0::capslock", max: 1)
        let interface = FakeControlV4L2(["/dev/video0": FakeCameras.vivid()])
        let discovery = TorchDiscovery(v4l2: interface, mediaController: FakeMediaController(), devRoot: "\(tree.root)/dev", sysfsRoot: sysfs)
        let torch = try discovery.torch(forDevice: "/dev/video0")
        #expect(torch.source == .led(name: "white:torch", directory: "\(sysfs)/class/leds/white:torch"))
        let lights = discovery.lights(forDevice: "/dev/video0", node: try interface.open("/dev/video0", options: V4L2OpenOptions()))
        #expect(lights.hasTorch && lights.hasFlash)
    }

    @Test func noLightAnywhereIsAClearError() throws {
        try led("input0::capslock", max: 1)
        let interface = FakeControlV4L2(["/dev/video0": FakeCameras.vivid()])
        let discovery = TorchDiscovery(v4l2: interface, mediaController: FakeMediaController(), devRoot: "\(tree.root)/dev", sysfsRoot: sysfs)
        #expect {
            try discovery.torch(forDevice: "/dev/video0")
        } throws: { error in
            "\(error)".hasPrefix("/dev/video0: no torch: it has no V4L2 flash controls, no flash sub-device in its media graph, and there is no LED class torch or flash")
        }
        #expect(discovery.lights(forDevice: "/dev/video0", node: try interface.open("/dev/video0", options: V4L2OpenOptions())) == (false, false))
        #expect(throws: TorchError.self) { try discovery.defaultTorch(cameras: ["/dev/video0"]) }
    }

    @Test func listedCamerasReportTheDetectorsAnswer() throws {
        try led("white:torch")
        try tree.file("dev/video0")
        let interface = FakeControlV4L2(["\(tree.root)/dev/video0": FakeCameras.vivid()])
        let discovery = DeviceDiscovery(v4l2: interface, alsa: FakeALSA(), devRoot: "\(tree.root)/dev", sysfsRoot: sysfs)
        let cameras = discovery.devices(for: .video)
        #expect(cameras.map(\.hasTorch) == [true])
        #expect(cameras.map(\.hasFlash) == [false])
    }

    // MARK: LED class

    @Test func anLEDTorchWritesBrightnessOutOfMaxBrightness() throws {
        try led("white:torch", max: 255)
        let torch = try TorchDiscovery(sysfsRoot: sysfs).torch(led: "white:torch")
        #expect(torch.hasTorch)
        #expect(!torch.hasFlash)
        try torch.setTorchModeOn(level: .level(0.5))
        #expect(try read("sys/class/leds/white:torch/brightness") == "128\n")
    }

    @Test func anLEDTorchReadsItsStateAndTurnsOff() throws {
        try led("white:torch", brightness: 51, max: 255)
        let torch = try TorchDiscovery(sysfsRoot: sysfs).torch(led: "white:torch")
        let status = try torch.status()
        #expect(status.isTorchActive)
        #expect(status.torchLevel == 0.2)
        try torch.setTorchMode(.off)
        #expect(try read("sys/class/leds/white:torch/brightness") == "0\n")
    }

    @Test func aOneStepLEDLightsAtAnyLevel() throws {
        try led("input0::capslock", max: 1)
        let torch = try TorchDiscovery(sysfsRoot: sysfs).torch(led: "input0::capslock")
        try torch.setTorchModeOn(level: .level(0.1))
        #expect(try read("sys/class/leds/input0::capslock/brightness") == "1\n")
    }

    @Test func anLEDFlashFaultBlocksTheTorch() throws {
        try led("white:flash", max: 100, flash: true, fault: "led-over-temperature")
        let torch = try TorchDiscovery(sysfsRoot: sysfs).torch(led: "white:flash")
        #expect(torch.hasFlash)
        #expect {
            try torch.setTorchModeOn(level: .level(0.5))
        } throws: { error in
            guard case TorchError.levelUnavailable(.level(0.5), 0, "led-over-temperature") = error else { return false }
            return true
        }
        #expect(try read("sys/class/leds/white:flash/brightness") == "0\n")
        try torch.strobeFlash()
        #expect(try read("sys/class/leds/white:flash/flash_strobe") == "1\n")
    }

    @Test func anUnknownLEDListsTheOnesThereAre() throws {
        try led("input0::capslock", max: 1)
        try led("input0::numlock", max: 1)
        #expect {
            try TorchDiscovery(sysfsRoot: sysfs).torch(led: "nosuch")
        } throws: { error in
            "\(error)" == "no LED named 'nosuch' under /sys/class/leds; LEDs here: input0::capslock, input0::numlock"
        }
        #expect(throws: TorchError.self) { try TorchDiscovery(sysfsRoot: sysfs).torch(led: "../leds/input0::capslock") }
    }

    @Test func permissionDeniedNamesTheFileAndHowToGrantAccess() {
        let error = TorchError.permissionDenied(file: "/sys/class/leds/white:torch/brightness",
                                                hint: LEDTorch.accessHint(path: "/nonexistent", led: "white:torch"))
        let text = "\(error)"
        #expect(text.hasPrefix("cannot write /sys/class/leds/white:torch/brightness: permission denied; "))
        #expect(text.contains("udev rule"))
        #expect(text.contains("KERNEL==\"white:torch\""))
    }
}

/// A media controller replayed from recorded graphs.
struct FakeMediaController: MediaControllerInterface {
    var numbers: [String: DeviceNumber] = [:]
    var topologies: [String: MediaTopology] = [:]

    func deviceNumber(of path: String) -> DeviceNumber? { numbers[path] }

    func topology(of path: String) throws(SystemCallError) -> MediaTopology {
        guard let topology = topologies[path] else { throw SystemCallError(call: "open(\(path))", errno: ENOENT) }
        return topology
    }
}
