import FoundationEssentials

/// Capture PCMs as /proc/asound describes them. The control device a card is
/// normally asked through may be closed to this user while procfs is
/// world-readable, so this is how devices the user may not open still get
/// listed (as denied) rather than vanishing.
enum ALSAProcfs {
    /// The capture PCMs of `card` from the texts of /proc/asound/pcm and /proc/asound/cards.
    static func captureDevices(card: Int32, cardID: String, pcmList: String, cardList: String) -> [ALSACaptureDescription] {
        let (cardName, driver) = cardNameAndDriver(card: card, cardList: cardList) ?? (cardID, "")
        return pcmList.split(separator: "\n").compactMap { line -> ALSACaptureDescription? in
            // "00-01: Loopback PCM : Loopback PCM : playback 8 : capture 8"
            let fields = line.split(separator: ":", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
            guard fields.count >= 3 else { return nil }
            let numbers = fields[0].split(separator: "-")
            guard numbers.count == 2, Int32(numbers[0]) == card, let device = Int32(numbers[1]) else { return nil }
            guard let capture = fields.dropFirst(3).first(where: { $0.hasPrefix("capture ") }),
                  let subdevices = UInt32(capture.dropFirst("capture ".count)) else { return nil }
            return ALSACaptureDescription(cardIndex: card, cardID: cardID, cardName: cardName, driver: driver,
                                          device: device, pcmName: fields[1], subdevices: subdevices)
        }
    }

    /// From a /proc/asound/cards line " 0 [Loopback       ]: Loopback - Loopback".
    static func cardNameAndDriver(card: Int32, cardList: String) -> (String, String)? {
        for line in cardList.split(separator: "\n") {
            let trimmed = line.trimmingWhitespace()
            guard let bracket = trimmed.firstIndex(of: "["), Int32(trimmed[..<bracket].trimmingWhitespace()) == card,
                  let close = trimmed.firstRange(of: "]: ") else { continue }
            let rest = trimmed[close.upperBound...]
            guard let dash = rest.firstRange(of: " - ") else { return (String(rest), "") }
            return (String(rest[dash.upperBound...]), String(rest[..<dash.lowerBound]))
        }
        return nil
    }
}
