@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// An empty system: no cameras, no sound cards.
private func emptyDiscovery(_ tree: TemporaryTree) -> DeviceDiscovery {
    DeviceDiscovery(v4l2: FakeV4L2(), alsa: FakeALSA(), devRoot: "\(tree.root)/dev", sysfsRoot: "\(tree.root)/sys")
}

/// Focus, exposure, white balance, zoom and torch on CaptureDevice, over fake V4L2 controls.
@Suite final class CaptureDeviceCameraSettingsTests {
    /// The fake devices' paths, whose advisory lock files (taken by
    /// `lockForConfiguration()` in the system's lock folder) go with the test.
    private let lockedPaths = Locked<[String]>([])

    deinit {
        for path in lockedPaths.current {
            unlink("\(ConfigurationLock.defaultDirectory())/\(ConfigurationLock.lockFileName(for: path))")
        }
    }

    /// A fake V4L2 camera as a CaptureDevice at a path of its own, with a fake
    /// clock (and, for the light, a fake sysfs) under its settings.
    func settingsDevice(_ camera: FakeCamera, hasTorch: Bool = false, clock: any ControlClock = FakeClock(),
                        sysfsRoot: String? = nil) -> (CaptureDevice, FakeControlV4L2) {
        let path = "/dev/fake-settings-\(UUID().uuidString)"
        lockedPaths.withLock { $0.append(path) }
        if let fake = clock as? FakeClock { camera.clock = fake }
        let v4l2 = FakeControlV4L2([path: camera])
        let device = CaptureDevice(path: path, uniqueID: "fake:\(path)", localizedName: "Fake Camera", mediaType: .video,
                                   driver: "fake", bus: "platform:fake", modelID: nil, position: .unspecified, hasTorch: hasTorch,
                                   hasFlash: false, access: .authorized, backend: .v4l2(v4l2))
        let discovery = TorchDiscovery(v4l2: v4l2, mediaController: FakeMediaController(), devRoot: "/nonexistent-dev",
                                       sysfsRoot: sysfsRoot ?? "/nonexistent-sys")
        device.useCameraSettingsEnvironment(clock: clock, torchDiscovery: discovery)
        return (device, v4l2)
    }

    // MARK: The lock

    @Test func focusModeSetUnderTheLockTakesEffect() throws {
        let camera = FakeCameras.full()
        let (device, _) = settingsDevice(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        #expect(device.focusMode == .continuousAutoFocus)
        device.focusMode = .locked
        #expect(camera.value(ControlID.focusAuto) == 0)
        #expect(device.focusMode == .locked)
        device.focusMode = .continuousAutoFocus
        #expect(camera.value(ControlID.focusAuto) == 1)
        device.whiteBalanceMode = .locked
        #expect(camera.value(ControlID.autoWhiteBalance) == 0)
        #expect(device.whiteBalanceMode == .locked)
        device.exposureMode = .locked
        #expect(camera.value(ControlID.exposureAuto) == 1)
        #expect(device.exposureMode == .locked)
    }

    @Test func settingsWithoutTheLockAreIgnoredAndTheThrowingFormsSayWhy() throws {
        let camera = FakeCameras.full()
        let (device, _) = settingsDevice(camera)
        device.focusMode = .locked
        device.exposureMode = .locked
        device.whiteBalanceMode = .locked
        device.videoZoomFactor = 2
        #expect(camera.log.isEmpty)
        #expect(camera.value(ControlID.focusAuto) == 1)
        #expect(device.focusMode == .continuousAutoFocus)
        #expect(device.videoZoomFactor == 1)
        let notLocked = ControlError.notLockedForConfiguration(device: device.path)
        #expect(throws: notLocked) { try device.setFocusMode(.locked) }
        #expect(throws: notLocked) { try device.setFocusModeLocked(lensPosition: 0.5) }
        #expect(throws: notLocked) { try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 100), iso: CaptureDevice.currentISO) }
        #expect(throws: notLocked) { try device.setExposureTargetBias(1) }
        #expect(throws: notLocked) { try device.setVideoZoomFactor(2) }
        #expect(throws: notLocked) { try device.ramp(toVideoZoomFactor: 2, withRate: 1) }
        #expect(camera.log.isEmpty)
        // After unlocking, changes are ignored again.
        try device.lockForConfiguration()
        device.videoZoomFactor = 2
        device.unlockForConfiguration()
        device.videoZoomFactor = 4
        #expect(camera.value(ControlID.zoomAbsolute) == 200)
    }

    @Test func anUnsupportedModeIsIgnoredAndTheThrowingFormSaysSo() throws {
        let camera = FakeCamera()
        camera.add(ControlID.focusAbsolute, "Focus, Absolute", type: .integer, min: 0, max: 100)
        let (device, _) = settingsDevice(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        #expect(device.isFocusModeSupported(.locked))
        #expect(!device.isFocusModeSupported(.continuousAutoFocus))
        device.focusMode = .continuousAutoFocus
        #expect(device.focusMode == .locked)
        #expect(camera.log.isEmpty)
        #expect {
            try device.setFocusMode(.continuousAutoFocus)
        } throws: { error in
            guard case .notSupported(let path, _, _) = error as? ControlError else { return false }
            return path == device.path
        }
        #expect(!device.isExposureModeSupported(.continuousAutoExposure))
        #expect(throws: ControlError.self) { try device.setVideoZoomFactor(2) }
    }

    @Test func theControlsAreOpenedOnceAndKept() throws {
        let (device, v4l2) = settingsDevice(FakeCameras.full())
        #expect(v4l2.opened.isEmpty)
        _ = device.focusMode
        _ = device.videoZoomFactor
        _ = device.isExposureModeSupported(.locked)
        try device.lockForConfiguration()
        device.videoZoomFactor = 2
        device.unlockForConfiguration()
        #expect(v4l2.opened.count == 1)
    }

    // MARK: Focus

    @Test func lockingFocusAtALensPositionTurnsContinuousFocusOffAndCallsBack() throws {
        let camera = FakeCameras.full()
        let (device, _) = settingsDevice(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        #expect(device.isLockingFocusWithCustomLensPositionSupported)
        var calls: [MediaTime] = []
        let before = MonotonicClock.now()
        try device.setFocusModeLocked(lensPosition: 0.4) { calls.append($0) }
        #expect(camera.value(ControlID.focusAuto) == 0)
        // V4L2 counts the other way: 250 − 0.4·250 = 150.
        #expect(camera.value(ControlID.focusAbsolute) == 150)
        #expect(abs(device.lensPosition - 0.4) < 1e-6)
        #expect(calls.count == 1)
        #expect(calls.first.map { $0 >= before } == true)
        #expect(throws: ControlError.self) { try device.setFocusModeLocked(lensPosition: 1.5) }
    }

    @Test func thereIsNoPointOfInterest() throws {
        let (device, _) = settingsDevice(FakeCameras.full())
        #expect(!device.isFocusPointOfInterestSupported)
        #expect(!device.isExposurePointOfInterestSupported)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        device.focusPointOfInterest = PointOfInterest(x: 0.1, y: 0.9)
        #expect(device.focusPointOfInterest == .center)
        #expect {
            try device.setExposurePointOfInterest(PointOfInterest(x: 0.2, y: 0.2))
        } throws: { error in
            guard case .notSupported = error as? ControlError else { return false }
            return true
        }
    }

    @Test func isAdjustingFocusFollowsTheAutoFocusStatus() throws {
        let camera = FakeCameras.full()
        let (device, _) = settingsDevice(camera)
        #expect(!device.isAdjustingFocus)
        camera.controls[ControlID.autoFocusStatus]?.value = 1
        #expect(device.isAdjustingFocus)
    }

    // MARK: Exposure

    @Test func customExposureSetsTheTimeAndTheGainWithAutomaticGainOff() throws {
        let camera = FakeCameras.full()
        let (device, _) = settingsDevice(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        #expect(device.isoRange == 0...255)
        var called = false
        try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 100), iso: 50) { _ in called = true }
        #expect(called)
        #expect(camera.value(ControlID.exposureAuto) == 1)
        #expect(camera.value(ControlID.exposureAbsolute) == 100)
        #expect(camera.value(ControlID.autoGain) == 0)
        #expect(camera.value(ControlID.gain) == 50)
        #expect(device.exposureMode == .locked)
        #expect(device.exposureDuration == MediaTime(value: 1, timescale: 100))
        #expect(device.iso == 50)
        #expect {
            try device.setExposureModeCustom(duration: CaptureDevice.currentExposureDuration, iso: 1000)
        } throws: { error in
            guard case .outOfRange = error as? ControlError else { return false }
            return true
        }
        #expect(camera.value(ControlID.gain) == 50)
    }

    @Test func withoutAGainControlISOIsIgnored() throws {
        let camera = FakeCameras.full()
        camera.remove(ControlID.gain)
        camera.remove(ControlID.autoGain)
        let (device, _) = settingsDevice(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 50), iso: 400)
        #expect(camera.value(ControlID.exposureAbsolute) == 200)
        #expect(device.iso == 0)
    }

    @Test func exposureBiasTakesTheNearestOfferedValue() throws {
        let camera = FakeCameras.full()
        let (device, _) = settingsDevice(camera)
        #expect(device.minExposureTargetBias == -2)
        #expect(device.maxExposureTargetBias == 2)
        #expect(device.exposureTargetBias == 0)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setExposureTargetBias(0.8)
        #expect(camera.value(ControlID.autoExposureBias) == 3)
        #expect(device.exposureTargetBias == 1)
        #expect(throws: ControlError.self) { try device.setExposureTargetBias(3) }
    }

    // MARK: Zoom

    @Test func zoomFactorMapsOntoZoomAbsolute() throws {
        let camera = FakeCameras.full(zoomMinimum: 100, zoomMaximum: 500)
        let (device, _) = settingsDevice(camera)
        #expect(device.maxAvailableVideoZoomFactor == 5)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        device.videoZoomFactor = 3
        #expect(camera.value(ControlID.zoomAbsolute) == 300)
        #expect(device.videoZoomFactor == 3)
        device.videoZoomFactor = 9  // beyond the maximum: ignored
        #expect(camera.value(ControlID.zoomAbsolute) == 300)
        #expect(throws: ControlError.self) { try device.setVideoZoomFactor(9) }
    }

    @Test func aZoomRampReachesItsFactorThroughIncreasingSteps() throws {
        let camera = FakeCameras.full(zoomMinimum: 100, zoomMaximum: 800)
        let (device, _) = settingsDevice(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.ramp(toVideoZoomFactor: 4, withRate: 2)
        #expect(eventually { !device.isRampingVideoZoom })
        let steps = camera.sets(of: ControlID.zoomAbsolute)
        #expect(steps.last == 400)
        #expect(steps.count > 10)
        #expect(steps == steps.sorted())
        #expect(device.videoZoomFactor == 4)
    }

    @Test func cancellingARampStopsTheZoomWhereItGot() throws {
        let camera = FakeCameras.full(zoomMinimum: 100, zoomMaximum: 800)
        // A real clock: 1x to 8x at 0.5 octaves a second takes 6 s.
        let (device, _) = settingsDevice(camera, clock: MonotonicControlClock())
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.ramp(toVideoZoomFactor: 8, withRate: 0.5)
        #expect(device.isRampingVideoZoom)
        usleep(300_000)
        device.cancelVideoZoomRamp()
        #expect(!device.isRampingVideoZoom)
        let stopped = device.videoZoomFactor
        usleep(200_000)
        #expect(device.videoZoomFactor == stopped)
        #expect(stopped < 8)
        #expect(camera.sets(of: ControlID.zoomAbsolute).allSatisfy { $0 < 800 })
    }

    @Test func settingTheZoomDuringARampStopsTheRamp() throws {
        let camera = FakeCameras.full(zoomMinimum: 100, zoomMaximum: 800)
        let (device, _) = settingsDevice(camera, clock: MonotonicControlClock())
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.ramp(toVideoZoomFactor: 8, withRate: 0.5)
        usleep(100_000)
        device.videoZoomFactor = 2
        #expect(!device.isRampingVideoZoom)
        usleep(200_000)
        #expect(device.videoZoomFactor == 2)
        #expect(camera.sets(of: ControlID.zoomAbsolute).last == 200)
    }

    @Test func aRampNeedsZoomAndARate() throws {
        let (device, _) = settingsDevice(FakeCameras.vivid())
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        #expect(device.maxAvailableVideoZoomFactor == 1)
        #expect(throws: ControlError.self) { try device.ramp(toVideoZoomFactor: 2, withRate: 1) }
        #expect(throws: ControlError.self) { try device.ramp(toVideoZoomFactor: 2, withRate: 0) }
        #expect(!device.isRampingVideoZoom)
    }

    // MARK: Torch

    @Test func theTorchOnTheCameraNodeTurnsOnUnderTheLock() throws {
        let camera = FakeCameras.flash()
        let (device, _) = settingsDevice(camera, hasTorch: true)
        #expect(device.isTorchModeSupported(.on))
        #expect(device.isTorchModeSupported(.off))
        #expect(!device.isTorchModeSupported(.auto))
        #expect(device.torchMode == .off)
        #expect {
            try device.setTorchModeOn(level: 0.5)
        } throws: { error in
            (error as? TorchError) == .control(.notLockedForConfiguration(device: device.path))
        }
        device.torchMode = .on
        #expect(camera.value(ControlID.flashLEDMode) == 0)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setTorchModeOn(level: 0.5)
        #expect(camera.value(ControlID.flashLEDMode) == 2)
        #expect(camera.value(ControlID.flashTorchIntensity) == 125_000)
        #expect(device.torchMode == .on)
        #expect(device.torchLevel == 0.5)
        device.torchMode = .off
        #expect(camera.value(ControlID.flashLEDMode) == 0)
        #expect(device.torchLevel == 0)
    }

    @Test func anLEDClassTorchServesACameraWithoutFlashControls() throws {
        let tree = try TemporaryTree()
        try tree.file("sys/class/leds/white:torch/brightness", "0\n")
        try tree.file("sys/class/leds/white:torch/max_brightness", "200\n")
        let (device, _) = settingsDevice(FakeCameras.vivid(), hasTorch: true, sysfsRoot: "\(tree.root)/sys")
        #expect(device.isTorchModeSupported(.on))
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setTorchModeOn(level: CaptureDevice.maxAvailableTorchLevel)
        let brightness = try String(contentsOfFile: "\(tree.root)/sys/class/leds/white:torch/brightness", encoding: .utf8)
        #expect(brightness.trimmingCharacters(in: .whitespacesAndNewlines) == "200")
        #expect(device.torchMode == .on)
        #expect(device.torchLevel == 1)
    }

    // MARK: Devices without camera controls

    @Test func theVirtualCameraSupportsNothingAndAnswersTheDefaults() throws {
        let tree = try TemporaryTree()
        let device = try #require(CaptureDevice.default(for: .video, discovery: emptyDiscovery(tree)))
        #expect(device.virtualDevice != nil)
        #expect(FocusMode.allCases.allSatisfy { !device.isFocusModeSupported($0) })
        #expect(ExposureMode.allCases.allSatisfy { !device.isExposureModeSupported($0) })
        #expect(WhiteBalanceMode.allCases.allSatisfy { !device.isWhiteBalanceModeSupported($0) })
        #expect(TorchMode.allCases.allSatisfy { !device.isTorchModeSupported($0) })
        #expect(!device.isFocusPointOfInterestSupported)
        #expect(!device.isLockingFocusWithCustomLensPositionSupported)
        #expect(device.focusMode == .locked)
        #expect(device.exposureMode == .locked)
        #expect(device.whiteBalanceMode == .locked)
        #expect(device.lensPosition == 1)
        #expect(!device.isAdjustingFocus)
        #expect(device.exposureTargetBias == 0)
        #expect(!device.exposureDuration.isNumeric)
        #expect(device.videoZoomFactor == 1)
        #expect(device.maxAvailableVideoZoomFactor == 1)
        #expect(device.torchMode == .off)
        #expect(device.torchLevel == 0)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        device.focusMode = .continuousAutoFocus
        device.videoZoomFactor = 2
        #expect(device.focusMode == .locked)
        #expect(device.videoZoomFactor == 1)
        #expect {
            try device.setFocusMode(.continuousAutoFocus)
        } throws: { error in
            guard case .notSupported(_, _, let reason) = error as? ControlError else { return false }
            return reason.contains("virtual")
        }
        #expect(throws: TorchError.self) { try device.setTorchModeOn(level: 1) }
    }

    @Test func aMicrophoneSupportsNoCameraSetting() throws {
        let device = try FakeMicrophone().device()
        #expect(!device.isFocusModeSupported(.locked))
        #expect(!device.isExposureModeSupported(.locked))
        #expect(device.videoZoomFactor == 1)
        #expect(device.torchMode == .off)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        #expect {
            try device.setVideoZoomFactor(2)
        } throws: { error in
            guard case .notSupported(_, _, let reason) = error as? ControlError else { return false }
            return reason.contains("microphone")
        }
    }
}

/// CaptureDevice.DiscoverySession over a fake /dev and replayed V4L2/ALSA replies.
@Suite struct CaptureDeviceDiscoverySessionTests {
    let tree: TemporaryTree
    let v4l2 = FakeV4L2()
    var alsa = FakeALSA()

    init() throws {
        tree = try TemporaryTree()
        alsa.devices = [ALSACaptureDescription(cardIndex: 0, cardID: "Dummy", cardName: "Dummy", driver: "Dummy", device: 0, pcmName: "Dummy PCM", subdevices: 1)]
    }

    var dev: String { "\(tree.root)/dev" }

    func discovery() -> DeviceDiscovery {
        DeviceDiscovery(v4l2: v4l2, alsa: alsa, devRoot: dev, sysfsRoot: "\(tree.root)/sys")
    }

    func node(_ name: String, bus: String, orientation: Int64? = nil) throws {
        try tree.file("dev/\(name)")
        var controls: [UInt32: (V4L2ControlDescription, Int64)] = [:]
        if let orientation {
            let description = V4L2ControlDescription(id: V4L2ControlID.cameraOrientation, type: 3, name: "Camera Orientation",
                                                     minimum: 0, maximum: 2, step: 1, defaultValue: 0, flags: 0x0004)
            controls[V4L2ControlID.cameraOrientation] = (description, orientation)
        }
        v4l2.nodes["\(dev)/\(name)"] = .init(capability: Caps.node(Caps.capture, card: name, bus: bus), controls: controls)
    }

    @Test func deviceTypesComeFromBusBackendAndMediaType() throws {
        try node("video0", bus: "usb-0000:00:14.0-1")
        try node("video1", bus: "platform:camera-0", orientation: 1)
        try node("video2", bus: "platform:camera-1", orientation: 2)
        let cameras = CaptureDevice.devices(for: .video, discovery: discovery())
        #expect(cameras.map(\.deviceType) == [.external, .builtInWideAngleCamera, .external, .virtual])
        let microphones = CaptureDevice.devices(for: .audio, discovery: discovery())
        #expect(microphones.filter { $0.virtualDevice == nil }.allSatisfy { $0.deviceType == .microphone })
        #expect(microphones.last?.deviceType == .virtual)
    }

    @Test func aSessionFiltersByTypeAndPosition() throws {
        try node("video0", bus: "usb-0000:00:14.0-1")
        try node("video1", bus: "platform:camera-0", orientation: 1)
        try node("video2", bus: "platform:camera-1", orientation: 0)
        let builtIn = CaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera], mediaType: .video, position: .unspecified, discovery: discovery())
        #expect(builtIn.devices.map(\.path) == ["\(dev)/video1", "\(dev)/video2"])
        let back = CaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .back, discovery: discovery())
        #expect(back.devices.map(\.path) == ["\(dev)/video1"])
        let external = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified, discovery: discovery())
        #expect(external.devices.map(\.path) == ["\(dev)/video0"])
        let virtual = CaptureDevice.DiscoverySession(deviceTypes: [.virtual], mediaType: nil, position: .unspecified, discovery: discovery())
        #expect(virtual.devices.map(\.mediaType) == [.video, .audio])
        #expect(virtual.devices.allSatisfy { $0.virtualDevice != nil })
        let microphones = CaptureDevice.DiscoverySession(deviceTypes: [.microphone], mediaType: nil, position: .unspecified, discovery: discovery())
        #expect(microphones.devices.map(\.path) == ["hw:Dummy,0", "default"])
        let none = CaptureDevice.DiscoverySession(deviceTypes: [.microphone], mediaType: .video, position: .unspecified, discovery: discovery())
        #expect(none.devices.isEmpty)
    }
}

/// authorizationStatus, accessProblems and requestAccess over a fake /dev.
@Suite struct CaptureDeviceAuthorizationTests {
    let tree: TemporaryTree
    let v4l2 = FakeV4L2()

    init() throws {
        tree = try TemporaryTree()
    }

    var dev: String { "\(tree.root)/dev" }

    func discovery() -> DeviceDiscovery {
        DeviceDiscovery(v4l2: v4l2, alsa: FakeALSA(), devRoot: dev, sysfsRoot: "\(tree.root)/sys")
    }

    func node(_ name: String, denied: Bool) throws {
        try tree.file("dev/\(name)")
        v4l2.nodes["\(dev)/\(name)"] = .init(capability: Caps.node(Caps.capture, card: name, bus: "usb-\(name)"))
        if denied { v4l2.openErrors["\(dev)/\(name)"] = EACCES }
    }

    @Test func aCameraThatCannotBeOpenedIsDeniedWithTheReason() throws {
        try node("video0", denied: true)
        #expect(CaptureDevice.authorizationStatus(for: .video, discovery: discovery()) == .denied)
        let problems = CaptureDevice.accessProblems(for: .video, discovery: discovery())
        #expect(problems.map(\.device.path) == ["\(dev)/video0"])
        #expect(problems.first?.reason.contains("permission denied") == true)
        #expect(problems.first.map { "\($0)" }?.hasPrefix("\(dev)/video0: permission denied") == true)
    }

    @Test func oneCameraThatOpensIsEnough() throws {
        try node("video0", denied: true)
        try node("video1", denied: false)
        #expect(CaptureDevice.authorizationStatus(for: .video, discovery: discovery()) == .authorized)
        #expect(CaptureDevice.accessProblems(for: .video, discovery: discovery()).count == 1)
    }

    @Test func withOnlyTheVirtualCameraAccessIsAuthorized() throws {
        #expect(CaptureDevice.authorizationStatus(for: .video, discovery: discovery()) == .authorized)
        #expect(CaptureDevice.authorizationStatus(for: .audio, discovery: discovery()) == .authorized)
        #expect(CaptureDevice.accessProblems(for: .video, discovery: discovery()).isEmpty)
    }

    @Test(arguments: [true, false])
    func requestAccessAnswersOnAnotherThread(denied: Bool) throws {
        try node("video0", denied: denied)
        let answer = Locked<(granted: Bool, thread: pthread_t)?>(nil)
        let caller = pthread_self()
        CaptureDevice.requestAccess(for: .video, discovery: discovery()) { granted in
            answer.withLock { $0 = (granted, pthread_self()) }
        }
        #expect(eventually { answer.current != nil })
        let result = try #require(answer.current)
        #expect(result.granted == !denied)
        #expect(pthread_equal(result.thread, caller) == 0)
    }
}
