import CFFmpeg

/// The speed presets a video encoder takes (`VideoOutputSettings.preset`),
/// as the encoder in this build of libavcodec states them.
package enum EncoderPresets: Sendable, Equatable, CustomStringConvertible {
    /// Presets by name, fastest first (x264 and x265: `ultrafast` … `placebo`).
    case names([String])
    /// A speed level in a range (libvpx's and libaom's cpu-used, SVT-AV1's
    /// preset, rav1e's speed), as the encoder's option declares it.
    case levels(ClosedRange<Int>)
    /// The encoder has no speed presets (MJPEG).
    case none
    /// The encoder has a preset option whose values cannot be listed: any
    /// value is passed on and the encoder judges it.
    case unlisted

    /// Whether `preset` is one the encoder takes.
    package func accepts(_ preset: String) -> Bool {
        switch self {
        case .names(let names): return names.contains(preset)
        case .levels(let range): return Int(preset).map(range.contains) ?? false
        case .none: return false
        case .unlisted: return true
        }
    }

    /// The presets for a message: `ultrafast, … or placebo`, `a number from 0 to 13`.
    package var description: String {
        switch self {
        case .names(let names):
            guard let last = names.last else { return "none" }
            return names.count == 1 ? last : names.dropLast().joined(separator: ", ") + " or " + last
        case .levels(let range): return "a number from \(range.lowerBound) to \(range.upperBound)"
        case .none: return "none"
        case .unlisted: return "what the encoder takes"
        }
    }
}

extension EncoderCatalog {
    /// The encoder `codec` would be encoded with and the speed presets it
    /// takes; nil when this FFmpeg has no encoder for `codec`.
    package static func presets(for codec: VideoCodec) -> (encoder: String, presets: EncoderPresets)? {
        guard let found = firstEncoder(codec.encoderNames) else { return nil }
        let (name, encoder) = found
        switch name {
        case "libx264", "libx265":
            // A string option: x264 and x265 know their list, libavcodec does not.
            return (name, .names(VideoOutputSettings.x26xPresets))
        case "mjpeg":
            return (name, .none)
        default:
            guard let option = presetOptionName(forEncoder: name) else { return (name, .none) }
            return (name, integerRange(of: option, in: encoder).map(EncoderPresets.levels) ?? .unlisted)
        }
    }

    /// The encoder option `VideoOutputSettings.preset` sets (see VideoEncoder).
    static func presetOptionName(forEncoder name: String) -> String? {
        switch name {
        case "libx264", "libx265", "libsvtav1": return "preset"
        case "libvpx-vp9", "libaom-av1": return "cpu-used"
        case "librav1e": return "speed"
        default: return nil
        }
    }

    /// The range an encoder's integer option declares, or nil when it has
    /// no such option or it is not an integer.
    private static func integerRange(of option: String, in encoder: UnsafePointer<AVCodec>) -> ClosedRange<Int>? {
        guard var privateClass = encoder.pointee.priv_class else { return nil }
        // A pointer to the class pointer stands for an object of that class (AV_OPT_SEARCH_FAKE_OBJ).
        let found = withUnsafeMutablePointer(to: &privateClass) { classPointer in
            av_opt_find(UnsafeMutableRawPointer(classPointer), option, nil, 0, AV_OPT_SEARCH_FAKE_OBJ)
        }
        guard let found, found.pointee.type == AV_OPT_TYPE_INT,
              let lower = Int(exactly: found.pointee.min.rounded(.up)), let upper = Int(exactly: found.pointee.max.rounded(.down)),
              lower <= upper else { return nil }
        return lower...upper
    }
}
