/// Percent-decoding (RFC 3986 §2.1) of a part of a request's target, done
/// once: what it decodes to is taken as it is, so `%252e` is the text `%2e`.
enum PercentDecoding {
    /// Why a text does not decode.
    enum Failure: Error, Equatable {
        /// A `%` not followed by two hexadecimal digits.
        case malformedEscape
        /// The bytes it decodes to are not UTF-8.
        case notUTF8
    }

    /// `encoded` with each `%XX` replaced by the byte it stands for; `+` stays `+`
    /// (it stands for a space only in forms, which a path is not).
    static func decode(_ encoded: some StringProtocol) throws(Failure) -> String {
        let source = Array(encoded.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(source.count)
        var index = 0
        while index < source.count {
            guard source[index] == UInt8(ascii: "%") else {
                bytes.append(source[index])
                index += 1
                continue
            }
            guard index + 2 < source.count, let high = hexValue(source[index + 1]), let low = hexValue(source[index + 2]) else {
                throw .malformedEscape
            }
            bytes.append(high << 4 | low)
            index += 3
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
