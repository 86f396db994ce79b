import CaptureKit
import FoundationEssentials

/// The human-readable form of `formats`.
enum FormatText {
    /// The first line: `vivid  /dev/video0  (v4l2:platform_vivid-000:vivid:0)`.
    static func title(_ device: NamedDevice) -> String {
        switch device {
        case .hardware(let device): return "\(device.localizedName)  \(device.path)  (\(device.uniqueID))"
        case .virtual(let device): return "\(device.localizedName)  \(device.specifier)  (\(device.uniqueID))"
        }
    }

    static func video(device: NamedDevice, active: ActiveVideoFormat?, formats: [VideoFormat]) -> String {
        var lines = [title(device)]
        if let active {
            let rate = active.frameInterval.map { "  " + interval($0) } ?? ""
            lines.append("active: \(active.fourcc) \(active.dimensions)\(rate)")
        }
        for (number, format) in formats.enumerated() {
            var flags = [String]()
            if format.isCompressed { flags.append("compressed") }
            if format.isEmulated { flags.append("emulated") }
            let flagText = flags.isEmpty ? "" : "  (\(flags.joined(separator: ", ")))"
            lines.append("[\(number)] \(format.fourcc.description.padding(8))\(format.description)\(flagText)")
            for size in format.sizes {
                lines.append(contentsOf: self.size(size))
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func size(_ range: FrameSizeRange) -> [String] {
        switch range {
        case .discrete(let size, let intervals):
            return ["    \(size.description.padding(11)) \(self.intervals(intervals))"]
        case .stepwise(let min, let max, let step, let intervals):
            return ["    stepwise \(min) to \(max), step \(step)",
                    "        at \(max): \(self.intervals(intervals))"]
        case .continuous(let min, let max, let intervals):
            return ["    continuous \(min) to \(max)",
                    "        at \(max): \(self.intervals(intervals))"]
        }
    }

    private static func intervals(_ range: FrameIntervalRange) -> String {
        switch range {
        case .discrete(let list): return list.map(interval).joined(separator: ", ")
        case .stepwise(let min, let max, let step):
            return "\(interval(max)) to \(interval(min)), step \(step)s"
        case .continuous(let min, let max):
            return "\(interval(max)) to \(interval(min)), continuous"
        case .unknown: return "intervals not reported"
        }
    }

    /// `30 fps (33.333 ms)`.
    static func interval(_ fraction: Fraction) -> String {
        guard fraction.numerator != 0, fraction.denominator != 0 else { return "\(fraction)s" }
        let seconds = Double(fraction.numerator) / Double(fraction.denominator)
        return "\(number(fraction.framesPerSecond)) fps (\(number(seconds * 1000)) ms)"
    }

    static func audio(device: NamedDevice, formats: [AudioFormat]) -> String {
        var lines = [title(device)]
        for format in formats {
            let rates = format.rateRange.lowerBound == format.rateRange.upperBound
                ? "\(format.rateRange.lowerBound) Hz" : "\(format.rateRange.lowerBound)–\(format.rateRange.upperBound) Hz"
            let channels = format.channelRange.lowerBound == format.channelRange.upperBound
                ? "\(format.channelRange.lowerBound)" : "\(format.channelRange.lowerBound)–\(format.channelRange.upperBound)"
            var line = "\(format.sampleFormat.padding(12)) rates \(rates), channels \(channels)"
            if !format.standardRates.isEmpty, format.rateRange.lowerBound != format.rateRange.upperBound {
                line += "; common rates \(format.standardRates.map(String.init).joined(separator: ", "))"
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// Up to three decimals, without trailing zeros: 30, 29.97, 33.333.
    private static func number(_ value: Double) -> String {
        var text = String(cFormat: "%.3f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}

extension String {
    /// The string padded with spaces to at least `width` characters.
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
