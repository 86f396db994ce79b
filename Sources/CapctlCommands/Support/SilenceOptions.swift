import ArgumentParser
import CaptureKit

/// `record`'s microphone watchdog: tell when a microphone stays silent, and when its sound returns.
struct SilenceOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Report audio-silent when a microphone stays below --silence-threshold this long (on the capture clock), and audio-restored when its sound returns.", valueName: "time"))
    var silenceTimeout: DurationArgument?

    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("With --silence-timeout: the level, in dBFS, that every sample stays below while silent (default -60).", valueName: "dbfs"))
    var silenceThreshold: DecibelArgument?
}

/// A level in dBFS: `-50`, `-50dB`, `-50dBFS`; above the meter's floor (−160) and up to 0.
package struct DecibelArgument: ExpressibleByArgument, CustomStringConvertible {
    let decibels: Double

    package init?(argument: String) {
        var text = Substring(argument.trimmingWhitespace().lowercased())
        for unit in ["dbfs", "db"] where text.hasSuffix(unit) {
            text = text.dropLast(unit.count)
            break
        }
        guard let value = Double(String(text).trimmingWhitespace()), value > Double(AudioLevels.floor), value <= 0 else { return nil }
        decibels = value
    }

    package var description: String { "\(decibels)" }

    static var defaultValueDescription: String { "a level in dBFS above -160 and up to 0, such as -50 or -50dB" }
}
