import Crypto
import FoundationEssentials

/// A credential's secret and the one form of it the service keeps: its SHA-256.
///
/// A secret is 256 random bits, so a fast hash is as hard to reverse as the secret
/// is to guess, and checking one costs a microsecond per request; a slow hash such
/// as bcrypt protects short passwords people choose, which these are not.
package enum CredentialSecret {
    /// The prefix every secret the service makes starts with (so that it can be found in a leaked file).
    package static let prefix = "capctl_"

    /// A new secret: `capctl_` and 43 base64url characters (32 random bytes).
    package static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return prefix + Base64URL.encode(bytes)
    }

    /// The SHA-256 of a secret, in lowercase hexadecimal, as the access file keeps it.
    package static func hash(_ secret: some StringProtocol) -> String {
        Hex.encode(SHA256.hash(data: Array(secret.utf8)))
    }
}

/// Base64 with the URL's alphabet and no padding (RFC 4648 §5).
package enum Base64URL {
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    /// The bytes of `text`, which must be their one encoding: a last character whose unused bits
    /// are not zero (another text for the same bytes) is refused, so that no two texts pass as one.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var base64 = String(text).replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let bytes = Data(base64Encoded: base64).map(Array.init), encode(bytes) == text else { return nil }
        return bytes
    }
}

/// Lowercase hexadecimal.
package enum Hex {
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return String(decoding: text, as: UTF8.self)
    }

    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(characters.count / 2)
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
