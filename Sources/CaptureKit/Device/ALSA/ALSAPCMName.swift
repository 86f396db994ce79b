#if canImport(Glibc)
import Glibc
#endif

/// What an ALSA PCM name says about the sound card it is on: `hw:1,0`,
/// `plughw:CARD=Loopback,DEV=1`, `sysdefault:99` name a card; `default` and
/// names from an asoundrc do not.
enum ALSAPCMName {
    /// The plugins whose first argument is the card (alsa-lib's
    /// `pcm.hw`, `pcm.plughw` and the card-level aliases of alsa.conf).
    static let cardPlugins: Set<String> = [
        "hw", "plughw", "sysdefault", "default", "dsnoop", "dmix", "front", "rear", "center_lfe", "side",
        "surround21", "surround40", "surround41", "surround50", "surround51", "surround71", "iec958", "spdif", "hdmi",
    ]

    /// The card `name` refers to, as written (a number or a card ID), or nil
    /// when the name has no card argument.
    static func card(in name: String) -> String? {
        guard let colon = name.firstIndex(of: ":") else { return nil }
        let plugin = String(name[..<colon])
        var positional: [String] = []
        for argument in name[name.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false) {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2 {
                if parts[0].trimmingSpaces.uppercased() == "CARD" { return unquoted(parts[1]) }
            } else {
                positional.append(unquoted(argument))
            }
        }
        guard cardPlugins.contains(plugin), let first = positional.first, !first.isEmpty else { return nil }
        return first
    }

    private static func unquoted(_ text: Substring) -> String {
        var value = text.trimmingSpaces
        for quote in ["\"", "'"] where value.count >= 2 && value.hasPrefix(quote) && value.hasSuffix(quote) {
            value = value.dropFirst().dropLast()
        }
        return String(value)
    }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}

extension DeviceError {
    /// The error for a failed `snd_pcm_open` of `name`. A name whose card is
    /// not present is no such device whatever alsa-lib answers (EINVAL for
    /// card numbers past the kernel's 32, ENOENT or ENODEV below); other
    /// failures by errno, as for any device.
    init(openingALSA name: String, _ error: SystemCallError, interface: any ALSAInterface) {
        if [EINVAL, ENOENT, ENODEV, ENXIO].contains(error.errno), let card = ALSAPCMName.card(in: name), !interface.cardExists(card) {
            self = .noSuchDevice(name, reason: "no such ALSA capture device: there is no sound card \(card); 'capctl list-devices' lists the microphones")
            return
        }
        self.init(opening: name, error, kind: "ALSA capture device")
    }
}
