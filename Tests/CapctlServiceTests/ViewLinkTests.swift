import CapctlService
import Crypto
import Testing

/// View links: one text per link, signed over all of it. Any character changed anywhere (the
/// MAC's last one included, whose low bits base64 leaves unused) makes it no link; the right
/// key and time make it the link it was made as.
@Suite struct ViewLinkTests {
    static let key = SymmetricKey(data: Array(0..<32))
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")

    @Test func everyChangedCharacterIsRefused() throws {
        for camera in ["0", "1", "12"] {
            let text = ViewLink(camera: camera, expires: 1_900_000_000).text(signedWith: Self.key)
            #expect(try ViewLink.verify(text, key: Self.key, now: 1_800_000_000).get() == ViewLink(camera: camera, expires: 1_900_000_000))
            let characters = Array(text)
            for index in characters.indices {
                for replacement in Self.alphabet where replacement != characters[index] {
                    var changed = characters
                    changed[index] = replacement
                    let result = ViewLink.verify(String(changed), key: Self.key, now: 1_800_000_000)
                    #expect((try? result.get()) == nil, "\(String(changed)) passed for \(text)")
                }
            }
        }
    }

    @Test func expiryAndKeyEndIt() {
        let text = ViewLink(camera: "0", expires: 1_900_000_000).text(signedWith: Self.key)
        guard case .failure(let late) = ViewLink.verify(text, key: Self.key, now: 1_900_000_000) else {
            Issue.record("a link was accepted at its expiry")
            return
        }
        #expect(late.reason == .expiredLink)
        guard case .failure(let other) = ViewLink.verify(text, key: SymmetricKey(size: .bits256), now: 0) else {
            Issue.record("a link was accepted with another key")
            return
        }
        #expect(other.reason == .badLink)
    }
}
