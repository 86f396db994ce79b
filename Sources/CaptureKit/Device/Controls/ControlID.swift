import CV4L2

/// The V4L2 control IDs behind CaptureKit's camera features and torch,
/// from the kernel's headers through the C shim.
public enum ControlID {
    // User class.
    public static let brightness: UInt32 = 0x0098_0900
    public static let autoWhiteBalance = cv4l2_CID_AUTO_WHITE_BALANCE
    public static let doWhiteBalance = cv4l2_CID_DO_WHITE_BALANCE
    public static let redBalance = cv4l2_CID_RED_BALANCE
    public static let blueBalance = cv4l2_CID_BLUE_BALANCE
    public static let exposure = cv4l2_CID_EXPOSURE
    public static let autoGain = cv4l2_CID_AUTOGAIN
    public static let gain = cv4l2_CID_GAIN
    public static let hue = cv4l2_CID_HUE
    public static let hueAuto = cv4l2_CID_HUE_AUTO
    public static let whiteBalanceTemperature = cv4l2_CID_WHITE_BALANCE_TEMPERATURE
    // Camera class.
    public static let exposureAuto = cv4l2_CID_EXPOSURE_AUTO
    public static let exposureAbsolute = cv4l2_CID_EXPOSURE_ABSOLUTE
    public static let exposureAutoPriority = cv4l2_CID_EXPOSURE_AUTO_PRIORITY
    public static let focusAbsolute = cv4l2_CID_FOCUS_ABSOLUTE
    public static let focusRelative = cv4l2_CID_FOCUS_RELATIVE
    public static let focusAuto = cv4l2_CID_FOCUS_AUTO
    public static let zoomAbsolute = cv4l2_CID_ZOOM_ABSOLUTE
    public static let autoExposureBias = cv4l2_CID_AUTO_EXPOSURE_BIAS
    public static let autoNPresetWhiteBalance = cv4l2_CID_AUTO_N_PRESET_WHITE_BALANCE
    public static let lock3A = cv4l2_CID_3A_LOCK
    public static let autoFocusStart = cv4l2_CID_AUTO_FOCUS_START
    public static let autoFocusStop = cv4l2_CID_AUTO_FOCUS_STOP
    public static let autoFocusStatus = cv4l2_CID_AUTO_FOCUS_STATUS
    public static let autoFocusRange = cv4l2_CID_AUTO_FOCUS_RANGE
    // Flash class.
    public static let flashLEDMode = cv4l2_CID_FLASH_LED_MODE
    public static let flashStrobeSource = cv4l2_CID_FLASH_STROBE_SOURCE
    public static let flashStrobe = cv4l2_CID_FLASH_STROBE
    public static let flashStrobeStop = cv4l2_CID_FLASH_STROBE_STOP
    public static let flashStrobeStatus = cv4l2_CID_FLASH_STROBE_STATUS
    public static let flashIntensity = cv4l2_CID_FLASH_INTENSITY
    public static let flashTorchIntensity = cv4l2_CID_FLASH_TORCH_INTENSITY
    public static let flashFault = cv4l2_CID_FLASH_FAULT
    public static let flashReady = cv4l2_CID_FLASH_READY

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
