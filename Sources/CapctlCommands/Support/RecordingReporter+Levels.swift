import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// `record`'s sound levels: `audioLevels` in `progress`, the status line's
/// meters, and the silence events `audio-silent` and `audio-restored`.
extension RecordingReporter {
    /// One microphone's levels over the time since the last progress event,
    /// per channel, in dBFS rounded to 0.01 (−160 for digital silence);
    /// `peak` and `rms` are left out when no audio came from it in that time.
    struct MicrophoneLevels: Encodable {
        /// Its number among the microphones, from 1 (the first --audio).
        var microphone: Int
        var device: String
        var peak: [Double]?
        var rms: [Double]?

        init(_ levels: CaptureRecorderAudioLevels) {
            microphone = levels.microphone
            device = levels.input.source.path
            guard levels.levels.hasAudio else { return }
            peak = levels.levels.peak.map { Double($0).rounded(toPlaces: 2) }
            rms = levels.levels.rms.map { Double($0).rounded(toPlaces: 2) }
        }
    }

    /// `audio-silent` and `audio-restored`.
    struct SilenceEvent: Encodable {
        var event: String
        var time: String
        var microphone: Int
        var device: String
        /// When the microphone went below the threshold (UTC, as `time`).
        var since: String
        /// On audio-silent: the threshold in dBFS.
        var threshold: Double?
        /// On audio-restored: how long the silence lasted, in seconds of capture time.
        var silentFor: Double?
    }

    /// A microphone fell silent, or its sound returned.
    func silence(_ event: AudioSilenceMonitor.Event, microphone: Int, input: CaptureInput, threshold: Double?) {
        let device = input.source.path
        let time = EventTime.now()
        switch event {
        case .silent(let since):
            let silentFor = max(0, MonotonicClock.now().seconds - since.seconds)
            emit(SilenceEvent(event: "audio-silent", time: time, microphone: microphone, device: device,
                              since: EventTime.wallTime(ofCaptureTime: since), threshold: threshold)) {
                "microphone \(microphone) (\(device)) is silent: below \(Self.decibels(threshold ?? 0)) dBFS for "
                    + String(cFormat: "%.1f s", silentFor)
            }
        case .restored(let since, _):
            let silentFor = event.silentFor.seconds
            emit(SilenceEvent(event: "audio-restored", time: time, microphone: microphone, device: device,
                              since: EventTime.wallTime(ofCaptureTime: since), silentFor: silentFor.rounded(toPlaces: 3))) {
                "microphone \(microphone) (\(device)) hears sound again after " + String(cFormat: "%.1f s", silentFor) + " of silence"
            }
        }
    }

    /// The status line's meters: each microphone's loudest channel's peak over the interval, such as `mic -12 dB ██████▍·`.
    static func levelMeters(_ levels: [CaptureRecorderAudioLevels], unicode: Bool = terminalTakesUnicode) -> [String] {
        levels.map { microphone in
            let label = levels.count == 1 ? "mic" : "mic\(microphone.microphone)"
            guard let peak = microphone.levels.peak.max(), microphone.levels.hasAudio else { return "\(label)   -- dB" }
            return "\(label) " + String(cFormat: "%4.0f dB ", Double(peak)) + meterBar(Double(peak), unicode: unicode)
        }
    }

    /// A bar of 8 cells from −60 dBFS (empty) to 0 (full): eighths of a
    /// cell in block characters, or whole cells of `#` where the terminal
    /// may not show them.
    static func meterBar(_ decibels: Double, unicode: Bool) -> String {
        let cells = 8
        let fraction = min(1, max(0, (decibels + 60) / 60))
        guard unicode else {
            let filled = Int((fraction * Double(cells)).rounded())
            return "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: cells - filled) + "]"
        }
        let eighths = Int((fraction * Double(cells * 8)).rounded())
        let partial = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][eighths % 8]
        let used = eighths / 8 + (partial.isEmpty ? 0 : 1)
        return String(repeating: "█", count: eighths / 8) + partial + String(repeating: "·", count: cells - used)
    }

    /// Whether the locale's character set is UTF-8 (LC_ALL, LC_CTYPE or LANG).
    static var terminalTakesUnicode: Bool {
        for name in ["LC_ALL", "LC_CTYPE", "LANG"] {
            guard let value = getenv(name).map({ String(cString: $0) }), !value.isEmpty else { continue }
            let lower = value.lowercased()
            return lower.contains("utf-8") || lower.contains("utf8")
        }
        return false
    }

    /// -60, -12.5: whole numbers without a fraction.
    private static func decibels(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
