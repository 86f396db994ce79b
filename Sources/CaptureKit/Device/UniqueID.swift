/// How unique IDs are formed where udev gives no /dev/v4l/by-id link.
enum UniqueID {
    /// `v4l2:BUS:CARD:N`: bus info and card name identify the device across
    /// reboots (and across replugging into the same port); N tells apart
    /// capture nodes of one device. Characters a shell would need quoted are
    /// replaced by `_`.
    static func derivedVideoID(busInfo: String, card: String, index: Int) -> String {
        "v4l2:\(sanitized(busInfo)):\(sanitized(card)):\(index)"
    }

    /// `alsa:CARDID:DEVICE`: ALSA card IDs are stable names, unlike card numbers.
    static func audioID(cardID: String, device: Int32) -> String {
        "alsa:\(sanitized(cardID)):\(device)"
    }

    static let audioDefaultID = "alsa:default"

    static func sanitized(_ text: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        let mapped = String(text.map { allowed.contains($0) ? $0 : "_" })
        return mapped.isEmpty ? "_" : mapped
    }
}
