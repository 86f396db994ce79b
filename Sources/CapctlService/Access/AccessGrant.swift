import CapctlCommands

/// Who a request comes from and what it may touch, once its credential or link is checked.
package struct AccessGrant: Sendable, Equatable {
    /// The credential's name in the access file, `token-file`, `view-link`, or `anyone` when the service needs no credential.
    package let name: String
    package let role: AccessRole
    /// The cameras (device ids, as GET /devices lists them) it covers; nil: every camera.
    package let cameras: Set<String>?
    /// When a view link ends, in seconds since 1970; nil for a credential.
    package let expires: Int?
    /// What keeps it valid: the credential's hash, or the key that signed the link (by its hash).
    package let source: Source

    package enum Source: Sendable, Equatable {
        /// No credential is needed (or the public page): it never ends.
        case open
        case credential(hash: String)
        case link(keyHash: String)
    }

    package init(name: String, role: AccessRole, cameras: Set<String>?, expires: Int? = nil, source: Source = .open) {
        self.name = name
        self.role = role
        self.cameras = cameras
        self.expires = expires
        self.source = source
    }

    /// What a service with neither a token file nor an access file grants every request (loopback only).
    package static let anyone = AccessGrant(name: "anyone", role: .admin, cameras: nil)

    /// Whether it covers the camera with this device id.
    package func covers(camera id: String) -> Bool {
        cameras?.contains(id) ?? true
    }

    /// Whether it comes from a view link rather than a credential.
    package var isViewLink: Bool { expires != nil }

    /// Whether it covers every camera of the service (what a recording, the files and the events touch).
    package var coversEveryCamera: Bool { cameras == nil }

    /// The refusal for a camera it does not cover.
    package func refusal(camera id: String) -> AccessRefusal {
        AccessRefusal(.camera, "credential '\(name)' does not cover camera \(id); it covers \(Self.list(cameras))")
    }

    package static func list(_ cameras: Set<String>?) -> String {
        guard let cameras else { return "every camera" }
        return cameras.isEmpty ? "no camera" : "camera " + cameras.sorted().joined(separator: ", ")
    }
}

/// Why a request was refused on access grounds: counted in /metrics by reason.
package struct AccessRefusal: Error, Sendable, CustomStringConvertible {
    package enum Reason: String, Sendable, CaseIterable {
        /// No credential where one is needed (401).
        case missing = "no-credential"
        /// A credential the service does not know (401).
        case unknown = "unknown-credential"
        /// A view link that is malformed, altered, signed with another key, or for another camera (401).
        case badLink = "bad-link"
        /// A view link past its expiry (401).
        case expiredLink = "expired-link"
        /// A role that does not allow the operation (403).
        case role
        /// A camera the credential does not cover (403).
        case camera
        /// A Host that does not name the service (403).
        case host
        /// A page of another origin asking for a change (403).
        case origin

        /// Whether the request is answered 401 (who it is is unknown) rather than 403 (it may not).
        package var isUnauthenticated: Bool { [.missing, .unknown, .badLink, .expiredLink].contains(self) }
    }

    package let reason: Reason
    package let message: String

    package init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    package var description: String { message }
}
