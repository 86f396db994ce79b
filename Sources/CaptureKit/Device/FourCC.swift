/// A V4L2 pixel format code: four ASCII characters packed little-endian, with
/// bit 31 marking the big-endian variant of a format (`v4l2_fourcc_be`).
public struct FourCC: Sendable, Hashable, CustomStringConvertible {
    public let code: UInt32

    /// The flag V4L2 sets on formats whose components are big-endian.
    static let bigEndianFlag: UInt32 = 1 << 31
    /// What `description` adds for a big-endian format, as v4l2-ctl writes it.
    static let bigEndianSuffix = "-BE"

    public init(code: UInt32) { self.code = code }

    /// A code from its four characters, such as `"YUYV"`; nil unless exactly
    /// four ASCII characters are given.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        code = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }

    /// A code as a person writes it: one to four characters, padded with
    /// spaces (`Y16` is `Y16 `), and `-BE` after them for the big-endian
    /// variant, the way `description` and v4l2-ctl print it (`Y16 -BE`,
    /// also `Y16-BE`). Quotes around it, as v4l2-ctl prints them
    /// (`'Y16 -BE'`), are left out. Nil for anything else.
    public init?(parsing text: String) {
        var name = Substring(text)
        for quote in ["'", "\""] where name.count >= 2 && name.hasPrefix(quote) && name.hasSuffix(quote) {
            name = name.dropFirst().dropLast()
        }
        var flag: UInt32 = 0
        if name.uppercased().hasSuffix(Self.bigEndianSuffix) {
            name = name.dropLast(Self.bigEndianSuffix.count)
            flag = Self.bigEndianFlag
        }
        guard (1...4).contains(name.utf8.count), name.first != " " else { return nil }
        guard let plain = FourCC(String(name) + String(repeating: " ", count: 4 - name.utf8.count)) else { return nil }
        code = plain.code | flag
    }

    /// Whether bit 31 marks the format as the big-endian variant.
    public var isBigEndian: Bool { code & Self.bigEndianFlag != 0 }

    /// The four characters as v4l2-ctl prints them: for a big-endian format
    /// all four (padding included) and `-BE` (`Y16 -BE`); for the others with
    /// trailing spaces removed (`Y16`).
    public var description: String {
        let chars = (0..<4).map { shift -> Character in
            let byte = UInt8(truncatingIfNeeded: (code & ~FourCC.bigEndianFlag) >> (8 * UInt32(shift)))
            return (0x20...0x7e).contains(byte) ? Character(Unicode.Scalar(byte)) : "?"
        }
        var text = String(chars)
        if isBigEndian { return text + Self.bigEndianSuffix }
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}
