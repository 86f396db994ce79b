/// A V4L2 pixel format code: four ASCII characters packed little-endian, with
/// bit 31 marking the big-endian variant of a format.
public struct FourCC: Sendable, Hashable, CustomStringConvertible {
    public let code: UInt32

    /// The flag V4L2 sets on formats whose components are big-endian.
    static let bigEndianFlag: UInt32 = 1 << 31

    public init(code: UInt32) { self.code = code }

    /// A code from its four characters, such as `"YUYV"`; nil unless exactly
    /// four ASCII characters are given.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        code = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }

    /// The four characters with trailing spaces removed, and `-BE` for big-endian formats.
    public var description: String {
        let chars = (0..<4).map { shift -> Character in
            let byte = UInt8(truncatingIfNeeded: (code & ~FourCC.bigEndianFlag) >> (8 * UInt32(shift)))
            return (0x20...0x7e).contains(byte) ? Character(Unicode.Scalar(byte)) : "?"
        }
        var text = String(chars)
        while text.hasSuffix(" ") { text.removeLast() }
        return code & FourCC.bigEndianFlag != 0 ? text + "-BE" : text
    }
}
