import CapctlCommands
import Crypto
import FoundationEssentials

/// A link to one camera's live view that ends at a given time: the camera, the
/// role (`view`) and the expiry, signed with the service's link key (HMAC-SHA-256).
/// It holds no secret that outlives it: a copy is worth nothing once it expires,
/// and every link ends at once when the key is replaced (`--rotate-link-key`).
///
/// Its text, sent as `?link=` on the view's URLs, is
/// `v1.view.CAMERA.EXPIRY.MAC`: CAMERA base64url, EXPIRY seconds since 1970, MAC base64url.
package struct ViewLink: Sendable, Equatable {
    /// The device id of the camera it shows.
    package let camera: String
    /// When it ends, in seconds since 1970.
    package let expires: Int

    package static let longest = 31 * 24 * 3600

    package init(camera: String, expires: Int) {
        self.camera = camera
        self.expires = expires
    }

    /// The link's text, signed with `key`.
    package func text(signedWith key: SymmetricKey) -> String {
        let body = "v1.view.\(Base64URL.encode(Array(camera.utf8))).\(expires)"
        return body + "." + Base64URL.encode(HMAC<SHA256>.authenticationCode(for: Array(body.utf8), using: key))
    }

    /// The link a text carries, if `key` signed it and it has not expired at `now`.
    package static func verify(_ text: some StringProtocol, key: SymmetricKey, now: Int) -> Result<ViewLink, AccessRefusal> {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "v1", parts[1] == "view",
              let cameraBytes = Base64URL.decode(parts[2]), let camera = String(validating: cameraBytes, as: UTF8.self),
              let expires = Int(parts[3]), let mac = Base64URL.decode(parts[4]) else {
            return .failure(AccessRefusal(.badLink, "the view link is not one this service makes; ask for a new one (POST /view-links)"))
        }
        let body = parts[0..<4].joined(separator: ".")
        // Compared in constant time by swift-crypto.
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Array(body.utf8), using: key) else {
            return .failure(AccessRefusal(.badLink, "the view link's signature does not match (altered, or made before the link key was replaced); ask for a new one"))
        }
        guard now < expires else {
            return .failure(AccessRefusal(.expiredLink, "the view link expired at \(EventTime.time(ofUnixSeconds: expires)); ask for a new one"))
        }
        return .success(ViewLink(camera: camera, expires: expires))
    }
}

