@testable import CaptureKit
import Testing

/// AVCaptureDevice's modes on V4L2 camera controls.
struct CameraFeatureTests {
    private func locked(_ camera: FakeCamera, clock: FakeClock = FakeClock()) throws -> DeviceControls {
        let controls = try openControls(camera, clock: clock)
        try controls.lockForConfiguration()
        return controls
    }

    // MARK: Support follows the controls the device has

    @Test func aCameraWithoutCameraControlsSupportsNoFeature() throws {
        let controls = try locked(FakeCameras.vivid())
        #expect(FocusMode.allCases.allSatisfy { !controls.isFocusModeSupported($0) })
        #expect(ExposureMode.allCases.allSatisfy { !controls.isExposureModeSupported($0) })
        #expect(WhiteBalanceMode.allCases.allSatisfy { !controls.isWhiteBalanceModeSupported($0) })
        #expect(!controls.isZoomSupported)
        #expect(!controls.isLowLightBoostSupported)
        #expect(try controls.focusMode() == nil)
        #expect(try controls.videoZoomFactor() == nil)
        #expect {
            try controls.apply([ControlAssignment(key: "focus", value: "continuous")])
        } throws: { error in
            "\(error)" == "/dev/fake-video0: focus mode 'continuous' is not supported: the device has no focus controls"
        }
        #expect {
            try controls.apply([ControlAssignment(key: "zoom", value: "2")])
        } throws: { error in
            "\(error)".contains("zoom is not supported: the device has no absolute zoom control")
        }
    }

    @Test func aFixedFocusLensWithOnlyAbsoluteFocusIsLockedOnly() throws {
        let camera = FakeCamera()
        camera.add(ControlID.focusAbsolute, "Focus, Absolute", type: .integer, min: 0, max: 100)
        let controls = try locked(camera)
        #expect(controls.isFocusModeSupported(.locked))
        #expect(!controls.isFocusModeSupported(.autoFocus))
        #expect(!controls.isFocusModeSupported(.continuousAutoFocus))
        #expect(try controls.focusMode() == .locked)
        #expect {
            try controls.setFocusMode(.continuousAutoFocus)
        } throws: { error in
            "\(error)".hasSuffix("focus mode 'continuous' is not supported: the device supports locked")
        }
    }

    // MARK: Focus

    @Test func focusModesMapOntoFocusAuto() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        #expect(FocusMode.allCases.allSatisfy(controls.isFocusModeSupported))
        #expect(try controls.focusMode() == .continuousAutoFocus)
        try controls.setFocusMode(.locked)
        #expect(camera.value(ControlID.focusAuto) == 0)
        #expect(try controls.focusMode() == .locked)
        try controls.setFocusMode(.continuousAutoFocus)
        #expect(camera.value(ControlID.focusAuto) == 1)
    }

    @Test func oneShotFocusTurnsContinuousOffAndPressesAutoFocusStart() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        try controls.setFocusMode(.autoFocus)
        #expect(camera.log.map(\.id) == [ControlID.focusAuto, ControlID.autoFocusStart])
        #expect(camera.value(ControlID.focusAuto) == 0)
    }

    @Test func withoutAutoFocusStartOneShotFocusRunsContinuousForTheSettleTimeThenLocks() throws {
        // A UVC webcam has continuous focus but no one-shot control.
        let camera = FakeCameras.full()
        camera.remove(ControlID.autoFocusStart)
        camera.externalSet(ControlID.focusAuto, 0)
        let clock = FakeClock()
        let controls = try locked(camera, clock: clock)
        controls.settleDuration = 1.5
        camera.log.removeAll()
        #expect(controls.isFocusModeSupported(.autoFocus))
        try controls.setFocusMode(.autoFocus)
        #expect(camera.sets(of: ControlID.focusAuto) == [1, 0])
        #expect(camera.log[1].time - camera.log[0].time == 1.5)
    }

    @Test func lensPositionRunsFromNearestToFurthest() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        try controls.setFocusModeLocked(lensPosition: 0)
        // V4L2 focuses closer with larger values.
        #expect(camera.value(ControlID.focusAbsolute) == 250)
        #expect(camera.value(ControlID.focusAuto) == 0)
        try controls.setFocusModeLocked(lensPosition: 1)
        #expect(camera.value(ControlID.focusAbsolute) == 0)
        try controls.setFocusModeLocked(lensPosition: 0.5)
        #expect(camera.value(ControlID.focusAbsolute) == 125)
        #expect(try controls.lensPosition() == 0.5)
        #expect {
            try controls.setFocusModeLocked(lensPosition: 1.2)
        } throws: { error in
            "\(error)".hasSuffix("lens_position=1.2 is out of range; allowed: 0.0 (nearest) to 1.0 (furthest)")
        }
    }

    @Test(arguments: [(AutoFocusRangeRestriction.none, Int64(0)), (.near, 2), (.far, 3)])
    func focusRangeMapsOntoTheAutoFocusRangeMenu(restriction: AutoFocusRangeRestriction, index: Int64) throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        #expect(controls.isAutoFocusRangeRestrictionSupported)
        try controls.setAutoFocusRangeRestriction(restriction)
        #expect(camera.value(ControlID.autoFocusRange) == index)
        #expect(try controls.autoFocusRangeRestriction() == restriction)
    }

    // MARK: Exposure

    @Test func continuousExposureIsAperturePriorityOnAUVCCamera() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        camera.externalSet(ControlID.exposureAuto, 1)
        #expect(try controls.exposureMode() == .locked)
        try controls.setExposureMode(.continuousAutoExposure)
        #expect(camera.value(ControlID.exposureAuto) == 3)
        #expect(try controls.exposureMode() == .continuousAutoExposure)
    }

    @Test func continuousExposureIsFullAutoWhereTheDeviceHasIt() throws {
        let camera = FakeCameras.full(exposureMenu: [0: "Auto Mode", 1: "Manual Mode", 3: "Aperture Priority Mode"])
        let controls = try locked(camera)
        try controls.setExposureMode(.continuousAutoExposure)
        #expect(camera.value(ControlID.exposureAuto) == 0)
    }

    @Test func lockingExposureKeepsTheTimeTheAutomaticModeChose() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        // The automatic mode chose 312 (31.2 ms); the manual default is 250.
        try controls.setExposureMode(.locked)
        #expect(camera.value(ControlID.exposureAuto) == 1)
        #expect(camera.value(ControlID.exposureAbsolute) == 312)
        #expect(try controls.exposureDuration() == 0.0312)
    }

    @Test func oneShotExposureExposesForTheSettleTimeThenLocks() throws {
        let camera = FakeCameras.full()
        let clock = FakeClock()
        let controls = try locked(camera, clock: clock)
        camera.externalSet(ControlID.exposureAuto, 1)
        camera.log.removeAll()
        try controls.setExposureMode(.autoExpose)
        #expect(camera.sets(of: ControlID.exposureAuto) == [3, 1])
        let times = camera.log.filter { $0.id == ControlID.exposureAuto }.map(\.time)
        #expect(times[1] - times[0] == controls.settleDuration)
    }

    @Test func exposureTimeIsInSecondsAndSwitchesToManual() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        try controls.apply([ControlAssignment(key: "exposure_time", value: "1/100")])
        #expect(camera.value(ControlID.exposureAuto) == 1)
        #expect(camera.value(ControlID.exposureAbsolute) == 100)
        try controls.apply([ControlAssignment(key: "exposure_time", value: "5ms")])
        #expect(camera.value(ControlID.exposureAbsolute) == 50)
        #expect {
            try controls.apply([ControlAssignment(key: "exposure_time", value: "1")])
        } throws: { error in
            "\(error)".hasSuffix("exposure_time=1.0 s is out of range; allowed: 0.0003…0.2047 s")
        }
    }

    @Test func exposureBiasTakesTheNearestOfferedValueInEV() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        #expect(controls.exposureTargetBiasValues() == [-2, -1, 0, 1, 2])
        try controls.setExposureTargetBias(-1.2)
        #expect(camera.value(ControlID.autoExposureBias) == 1)
        #expect(try controls.exposureTargetBias() == -1)
        #expect {
            try controls.setExposureTargetBias(3)
        } throws: { error in
            "\(error)".hasSuffix("exposure_bias=3.0 EV is out of range; allowed: -2.0…2.0 EV")
        }
    }

    @Test func lowLightBoostIsExposureAutoPriority() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        #expect(controls.isLowLightBoostSupported)
        try controls.apply([ControlAssignment(key: "low_light_boost", value: "on")])
        #expect(camera.value(ControlID.exposureAutoPriority) == 1)
        #expect(try controls.automaticallyEnablesLowLightBoostWhenAvailable() == true)
    }

    // MARK: White balance

    @Test func whiteBalanceModesMapOntoAutoWhiteBalanceAndDoWhiteBalance() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        try controls.setWhiteBalanceMode(.locked)
        #expect(camera.value(ControlID.autoWhiteBalance) == 0)
        camera.log.removeAll()
        try controls.setWhiteBalanceMode(.autoWhiteBalance)
        #expect(camera.log.map(\.id) == [ControlID.autoWhiteBalance, ControlID.doWhiteBalance])
        try controls.setWhiteBalanceMode(.continuousAutoWhiteBalance)
        #expect(try controls.whiteBalanceMode() == .continuousAutoWhiteBalance)
    }

    @Test func whiteBalanceUsesThePresetMenuWithoutAnAutomaticSwitch() throws {
        let camera = FakeCamera()
        camera.add(ControlID.autoNPresetWhiteBalance, "White Balance, Auto & Preset", type: .menu, min: 0, max: 3, default: 1,
                   menu: [0: "Manual", 1: "Auto", 2: "Incandescent", 3: "Daylight"])
        let controls = try locked(camera)
        #expect(WhiteBalanceMode.allCases.allSatisfy(controls.isWhiteBalanceModeSupported))
        try controls.setWhiteBalanceMode(.locked)
        #expect(camera.value(ControlID.autoNPresetWhiteBalance) == 0)
        try controls.setWhiteBalanceMode(.continuousAutoWhiteBalance)
        #expect(camera.value(ControlID.autoNPresetWhiteBalance) == 1)
    }

    @Test func temperatureTurnsAutomaticWhiteBalanceOffFirst() throws {
        let camera = FakeCameras.full()
        let controls = try locked(camera)
        try controls.apply([ControlAssignment(key: "temperature", value: "5000K")])
        #expect(camera.log.map(\.id) == [ControlID.autoWhiteBalance, ControlID.whiteBalanceTemperature])
        #expect(camera.value(ControlID.whiteBalanceTemperature) == 5000)
        #expect {
            try controls.apply([ControlAssignment(key: "temperature", value: "9000")])
        } throws: { error in
            "\(error)".hasSuffix("temperature=9000 K is out of range; allowed: 2800…6500 K")
        }
    }

    // MARK: Zoom

    @Test func zoomFactorsCountTheMinimumAsOne() throws {
        let camera = FakeCameras.full(zoomMinimum: 100, zoomMaximum: 500)
        let controls = try locked(camera)
        #expect(try controls.videoMaxZoomFactor() == 5)
        try controls.setVideoZoomFactor(2.5)
        #expect(camera.value(ControlID.zoomAbsolute) == 250)
        #expect(try controls.videoZoomFactor() == 2.5)
        #expect {
            try controls.setVideoZoomFactor(6)
        } throws: { error in
            "\(error)".hasSuffix("zoom=6.0 is out of range; allowed: 1.0…5.0")
        }
        #expect(throws: ControlError.self) { try controls.setVideoZoomFactor(0.5) }
    }

    @Test func zoomFromZeroCountsStepsAboveOne() throws {
        let camera = FakeCameras.full(zoomMinimum: 0, zoomMaximum: 10)
        let controls = try locked(camera)
        #expect(try controls.videoMaxZoomFactor() == 11)
        try controls.setVideoZoomFactor(3)
        #expect(camera.value(ControlID.zoomAbsolute) == 2)
    }

    @Test func featureValuesParse() throws {
        #expect(FeatureValue.parseSeconds("1/250") == 0.004)
        #expect(FeatureValue.parseSeconds("20ms") == 0.02)
        #expect(FeatureValue.parseSeconds("0.5s") == 0.5)
        #expect(FeatureValue.parseSeconds("1/0") == nil)
        let controls = try locked(FakeCameras.full())
        #expect {
            try controls.apply([ControlAssignment(key: "focus", value: "sharp")])
        } throws: { error in
            "\(error)" == "/dev/fake-video0: 'sharp' is not a value of focus; allowed: locked, auto or continuous"
        }
        try controls.apply([ControlAssignment(key: "focus", value: "manual")])
        #expect(try controls.focusMode() == .locked)
    }
}
