/// A quality level for a session's video, like AVCaptureSession.Preset:
/// named levels choose among the device's sizes, fixed sizes ask for one.
public enum SessionPreset: String, Sendable, Hashable, CaseIterable {
    /// The largest size the device offers at 30 fps or more where it can, else its largest.
    case high
    /// About 640x480 (the offered size nearest to it).
    case medium
    /// About 320x240.
    case low
    case vga640x480 = "640x480"
    case hd1280x720 = "1280x720"
    case hd1920x1080 = "1920x1080"
    case uhd3840x2160 = "3840x2160"
    /// The largest size the device offers, at any rate: for stills.
    case photo

    /// The exact size this preset requires, for the fixed-size presets.
    public var requiredSize: (width: Int, height: Int)? {
        switch self {
        case .vga640x480: return (640, 480)
        case .hd1280x720: return (1280, 720)
        case .hd1920x1080: return (1920, 1080)
        case .uhd3840x2160: return (3840, 2160)
        case .high, .medium, .low, .photo: return nil
        }
    }

    /// The size a named level aims at (nil: the largest).
    public var targetSize: (width: Int, height: Int)? {
        switch self {
        case .medium: return (640, 480)
        case .low: return (320, 240)
        default: return requiredSize
        }
    }
}
