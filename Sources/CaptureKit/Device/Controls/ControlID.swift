import CV4L2

/// The V4L2 control IDs behind CaptureKit's camera features and torch,
/// from the kernel's headers through the C shim.
package enum ControlID {
    // User class.
    package static let brightness: UInt32 = 0x0098_0900
    package static let autoWhiteBalance = cv4l2_CID_AUTO_WHITE_BALANCE
    package static let doWhiteBalance = cv4l2_CID_DO_WHITE_BALANCE
    package static let redBalance = cv4l2_CID_RED_BALANCE
    package static let blueBalance = cv4l2_CID_BLUE_BALANCE
    package static let exposure = cv4l2_CID_EXPOSURE
    package static let autoGain = cv4l2_CID_AUTOGAIN
    package static let gain = cv4l2_CID_GAIN
    package static let hue = cv4l2_CID_HUE
    package static let hueAuto = cv4l2_CID_HUE_AUTO
    package static let whiteBalanceTemperature = cv4l2_CID_WHITE_BALANCE_TEMPERATURE
    // Camera class.
    package static let exposureAuto = cv4l2_CID_EXPOSURE_AUTO
    package static let exposureAbsolute = cv4l2_CID_EXPOSURE_ABSOLUTE
    package static let exposureAutoPriority = cv4l2_CID_EXPOSURE_AUTO_PRIORITY
    package static let focusAbsolute = cv4l2_CID_FOCUS_ABSOLUTE
    package static let focusRelative = cv4l2_CID_FOCUS_RELATIVE
    package static let focusAuto = cv4l2_CID_FOCUS_AUTO
    package static let zoomAbsolute = cv4l2_CID_ZOOM_ABSOLUTE
    package static let autoExposureBias = cv4l2_CID_AUTO_EXPOSURE_BIAS
    package static let autoNPresetWhiteBalance = cv4l2_CID_AUTO_N_PRESET_WHITE_BALANCE
    package static let lock3A = cv4l2_CID_3A_LOCK
    package static let autoFocusStart = cv4l2_CID_AUTO_FOCUS_START
    package static let autoFocusStop = cv4l2_CID_AUTO_FOCUS_STOP
    package static let autoFocusStatus = cv4l2_CID_AUTO_FOCUS_STATUS
    package static let autoFocusRange = cv4l2_CID_AUTO_FOCUS_RANGE
    // Flash class.
    package static let flashLEDMode = cv4l2_CID_FLASH_LED_MODE
    package static let flashStrobeSource = cv4l2_CID_FLASH_STROBE_SOURCE
    package static let flashStrobe = cv4l2_CID_FLASH_STROBE
    package static let flashStrobeStop = cv4l2_CID_FLASH_STROBE_STOP
    package static let flashStrobeStatus = cv4l2_CID_FLASH_STROBE_STATUS
    package static let flashIntensity = cv4l2_CID_FLASH_INTENSITY
    package static let flashTorchIntensity = cv4l2_CID_FLASH_TORCH_INTENSITY
    package static let flashFault = cv4l2_CID_FLASH_FAULT
    package static let flashReady = cv4l2_CID_FLASH_READY

    /// V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND: with a
    /// control ID, asks VIDIOC_QUERY_EXT_CTRL for the next control of any kind.
    static let nextControlFlags: UInt32 = 0xc000_0000

    /// The automatic control that makes a manual one inactive while it is on,
    /// for the hint in a refusal ("gain is inactive while gain_automatic is on").
    static let automaticPartner: [UInt32: [UInt32]] = [
        gain: [autoGain],
        exposure: [autoGain, exposureAuto],
        exposureAbsolute: [exposureAuto],
        focusAbsolute: [focusAuto],
        focusRelative: [focusAuto],
        whiteBalanceTemperature: [autoWhiteBalance, autoNPresetWhiteBalance],
        redBalance: [autoWhiteBalance],
        blueBalance: [autoWhiteBalance],
        hue: [hueAuto],
    ]
}
