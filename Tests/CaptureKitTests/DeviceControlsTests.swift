@testable import CaptureKit
import Testing

/// Raw V4L2 controls: listing, names, values, and the checks before a set.
struct DeviceControlsTests {
    @Test(arguments: [
        ("Gain, Automatic", "gain_automatic"),
        ("Brightness", "brightness"),
        ("White Balance Temperature, Auto", "white_balance_temperature_auto"),
        ("Exposure Time, Absolute", "exposure_time_absolute"),
        ("  Power Line Frequency  ", "power_line_frequency"),
        ("H.264 Profile", "h_264_profile"),
        ("Test Pattern (100%)", "test_pattern_100"),
    ])
    func namesAreWrittenAsV4L2CtlWritesThem(label: String, name: String) {
        #expect(DeviceControl.canonicalName(label) == name)
    }

    @Test func controlsAreListedByClassWithTheDriversClassNames() throws {
        let controls = try openControls(FakeCameras.full())
        let classes = try controls.controlClasses()
        #expect(classes.map(\.name) == ["User Controls", "Camera Controls"])
        #expect(classes[0].controls.map(\.name).prefix(3) == ["brightness", "contrast", "hue"])
        #expect(classes[1].controls.contains { $0.name == "zoom_absolute" })
        // Class entries are not controls.
        #expect(try controls.allControls().allSatisfy { $0.type != .controlClass })
    }

    @Test func aControlCarriesRangeValueMenuAndFlags() throws {
        let camera = FakeCameras.full()
        let controls = try openControls(camera)
        let exposure = try controls.control(named: "auto_exposure")
        #expect(exposure.type == .menu)
        #expect(exposure.menu.map(\.index) == [1, 3])
        #expect(exposure.menu.map(\.name) == ["Manual Mode", "Aperture Priority Mode"])
        #expect(exposure.value == .integer(3))
        #expect(exposure.valueText == "Aperture Priority Mode")
        let bias = try controls.control(named: "auto_exposure_bias")
        #expect(bias.menu.compactMap(\.integerValue) == [-2000, -1000, 0, 1000, 2000])
        let gain = try controls.control(named: "gain")
        #expect(gain.flags.contains(.inactive))
        #expect(gain.flags.names == ["inactive", "volatile"])
    }

    @Test func negativeValuesOf32BitControlsSurviveTheRead() throws {
        let camera = FakeCameras.vivid()
        camera.externalSet(ControlID.hue, -100)
        let controls = try openControls(camera)
        #expect(try controls.control(named: "hue").value == .integer(-100))
    }

    @Test func controlsAreFoundByNameLabelOrID() throws {
        let controls = try openControls(FakeCameras.vivid())
        #expect(try controls.control(named: "brightness").id == 0x0098_0900)
        #expect(try controls.control(named: "Gain, Automatic").id == ControlID.autoGain)
        #expect(try controls.control(named: "0x00980900").name == "brightness")
        #expect(try controls.control(named: "9963776").name == "brightness")
    }

    @Test func anUnknownNameSuggestsCloseOnes() throws {
        let controls = try openControls(FakeCameras.vivid())
        #expect {
            try controls.control(named: "brigtness")
        } throws: { error in
            guard case ControlError.unknownControl(_, "brigtness", let suggestions) = error else { return false }
            return suggestions == ["brightness"] && "\(error)".contains("did you mean 'brightness'")
        }
    }

    @Test func changesNeedTheConfigurationLock() throws {
        let controls = try openControls(FakeCameras.vivid())
        let brightness = try controls.control(named: "brightness")
        #expect(throws: ControlError.notLockedForConfiguration(device: "/dev/fake-video0")) {
            try controls.setValue(.integer(10), for: brightness)
        }
    }

    @Test(arguments: [
        ("60", Int64(60)), ("0x10", 16), ("min", 0), ("max", 255), ("default", 128),
    ])
    func integerValuesParse(text: String, stored: Int64) throws {
        let camera = FakeCameras.vivid()
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        try controls.setValue(text: text, for: try controls.control(named: "brightness"))
        #expect(camera.value(0x0098_0900) == stored)
    }

    @Test(arguments: [("on", Int64(1)), ("off", 0), ("true", 1), ("0", 0), ("yes", 1)])
    func booleanValuesParse(text: String, stored: Int64) throws {
        let camera = FakeCameras.vivid()
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        try controls.setValue(text: text, for: try controls.control(named: "horizontal_flip"))
        #expect(camera.value(0x0098_0914) == stored)
    }

    @Test func menuValuesAreIndicesOrEntryNames() throws {
        let camera = FakeCameras.full()
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        let menu = try controls.control(named: "auto_exposure")
        try controls.setValue(text: "Manual Mode", for: menu)
        #expect(camera.value(ControlID.exposureAuto) == 1)
        try controls.setValue(text: "aperture_priority_mode", for: menu)
        #expect(camera.value(ControlID.exposureAuto) == 3)
        try controls.setValue(text: "1", for: menu)
        #expect(camera.value(ControlID.exposureAuto) == 1)
        // Index 2 is a hole in this menu.
        #expect {
            try controls.setValue(text: "2", for: try controls.control(named: "auto_exposure"))
        } throws: { error in
            "\(error)" == "/dev/fake-video0: auto_exposure=2 is out of range; allowed: one of: 1 (Manual Mode), 3 (Aperture Priority Mode)"
        }
    }

    @Test func outOfRangeValuesAreRefusedWithTheRange() throws {
        let camera = FakeCameras.vivid()
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        #expect {
            try controls.setValue(text: "300", for: try controls.control(named: "brightness"))
        } throws: { error in
            "\(error)" == "/dev/fake-video0: brightness=300 is out of range; allowed: 0…255"
        }
        #expect(camera.sets(of: 0x0098_0900).isEmpty)
    }

    @Test func valuesOffTheStepAreRefusedWithTheNearestOnes() throws {
        let controls = try openControls(FakeCameras.full())
        try controls.lockForConfiguration()
        try controls.setValue(text: "0", for: try controls.control(named: "focus_automatic_continuous"))
        #expect {
            try controls.setValue(text: "12", for: try controls.control(named: "focus_absolute"))
        } throws: { error in
            "\(error)".hasSuffix("allowed: 0…250 in steps of 5 (nearest: 10 or 15)")
        }
    }

    @Test func malformedValuesAreRefusedWithWhatIsAllowed() throws {
        let controls = try openControls(FakeCameras.vivid())
        try controls.lockForConfiguration()
        #expect {
            try controls.setValue(text: "bright", for: try controls.control(named: "brightness"))
        } throws: { error in
            "\(error)" == "/dev/fake-video0: 'bright' is not a value of brightness; allowed: 0…255"
        }
        #expect {
            try controls.setValue(text: "maybe", for: try controls.control(named: "vertical_flip"))
        } throws: { error in
            "\(error)".contains("allowed: 0 or 1")
        }
    }

    @Test func readOnlyControlsAreRefused() throws {
        let controls = try openControls(FakeCameras.full())
        try controls.lockForConfiguration()
        #expect(throws: ControlError.readOnly(device: "/dev/fake-video0", control: "auto_focus_status")) {
            try controls.apply([ControlAssignment(key: "auto_focus_status", value: "1")])
        }
    }

    @Test func inactiveControlsAreRefusedNamingTheAutomaticControl() throws {
        let camera = FakeCameras.vivid()
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        #expect {
            try controls.apply([ControlAssignment(key: "gain", value: "50")])
        } throws: { error in
            "\(error)" == "/dev/fake-video0: gain is inactive: gain_automatic is on; set gain_automatic=0 (off) first, or earlier in the same command"
        }
        #expect(camera.sets(of: ControlID.gain).isEmpty)
    }

    @Test func settingsApplyInOrderSoAnEarlierOneCanActivateALaterOne() throws {
        let camera = FakeCameras.vivid()
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        var applied: [AppliedSetting] = []
        try controls.apply([ControlAssignment(key: "gain_automatic", value: "0"), ControlAssignment(key: "gain", value: "50")]) {
            applied.append($0)
        }
        #expect(camera.value(ControlID.autoGain) == 0)
        #expect(camera.value(ControlID.gain) == 50)
        #expect(applied.map(\.name) == ["gain_automatic", "gain"])
        #expect(applied.map(\.value) == [.integer(0), .integer(50)])
        #expect(applied.first?.meaning == "off")
    }

    @Test func nothingIsAppliedWhenALaterSettingIsWrong() throws {
        let camera = FakeCameras.vivid()
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        #expect(throws: ControlError.self) {
            try controls.apply([ControlAssignment(key: "brightness", value: "10"), ControlAssignment(key: "nonsense", value: "1")])
        }
        #expect(throws: ControlError.self) {
            try controls.apply([ControlAssignment(key: "brightness", value: "10"), ControlAssignment(key: "contrast", value: "999")])
        }
        #expect(camera.log.isEmpty)
    }

    @Test func assignmentsParseNameEqualsValue() {
        #expect(ControlAssignment(parsing: "brightness=60") == ControlAssignment(key: "brightness", value: "60"))
        #expect(ControlAssignment(parsing: "title=a=b") == ControlAssignment(key: "title", value: "a=b"))
        #expect(ControlAssignment(parsing: "text=") == ControlAssignment(key: "text", value: ""))
        #expect(ControlAssignment(parsing: "brightness") == nil)
        #expect(ControlAssignment(parsing: "=5") == nil)
        #expect(ControlAssignment(parsing: "ZOOM=2")?.feature == .zoom)
    }
}
