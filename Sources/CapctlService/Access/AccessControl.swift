import CapctlCommands
import Crypto
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Who may do what on the service: its credentials (the token file's, as one
/// `admin`, and the access file's), the key its view links are signed with,
/// and the refusals so far by reason. `reload()` (on SIGHUP) reads the files
/// again; a file that cannot be read leaves what was in force.
package final class AccessControl: Sendable {
    package struct Settings: Sendable {
        /// The token of --token-file, if any: one `admin` credential.
        package var token: String?
        /// --access-file, if any.
        package var accessFilePath: String?
        /// --link-key-file, if any; without one, links are signed with a key made at start
        /// and end when the service does.
        package var linkKeyPath: String?

        package init(token: String? = nil, accessFilePath: String? = nil, linkKeyPath: String? = nil) {
            self.token = token
            self.accessFilePath = accessFilePath
            self.linkKeyPath = linkKeyPath
        }
    }

    private struct State: Sendable {
        /// Credentials by the SHA-256 of their secret.
        var credentials: [String: AccessGrant] = [:]
        /// The link key's bytes (SymmetricKey is not Sendable; one is made of them for each use).
        var linkKey: [UInt8]
    }

    private let settings: Settings
    private let state: Mutex<State>
    private let refusals = Mutex<[AccessRefusal.Reason: Int]>([:])
    /// Whether requests need a credential: a token file or an access file was given.
    package let requiresCredentials: Bool

    package init(_ settings: Settings) throws {
        self.settings = settings
        requiresCredentials = settings.token != nil || settings.accessFilePath != nil
        state = Mutex(State(credentials: try Self.credentials(settings), linkKey: try Self.linkKey(settings)))
    }

    /// Reads the access file and the link key again (SIGHUP). Throws, and keeps what was in force, when either cannot be read.
    package func reload() throws {
        let credentials = try Self.credentials(settings)
        let key = try settings.linkKeyPath.map { try Self.linkKey(Settings(linkKeyPath: $0)) }
        state.withLock { state in
            state.credentials = credentials
            if let key { state.linkKey = key }
        }
    }

    /// The grant of a bearer secret; a refusal when the service does not know it.
    package func grant(secret: some StringProtocol) -> Result<AccessGrant, AccessRefusal> {
        let hash = CredentialSecret.hash(secret)
        if let grant = state.withLock({ $0.credentials[hash] }) { return .success(grant) }
        return .failure(AccessRefusal(.unknown, "the service does not know this credential (revoked, mistyped, or from another service)"))
    }

    /// The grant of a view link: `view`, its camera only, until it expires.
    package func grant(link: some StringProtocol, now: Int = AccessControl.now()) -> Result<AccessGrant, AccessRefusal> {
        let bytes = state.withLock { $0.linkKey }
        return ViewLink.verify(link, key: SymmetricKey(data: bytes), now: now).map {
            AccessGrant(name: "view-link", role: .view, cameras: [$0.camera], expires: $0.expires, source: .link(keyHash: Self.keyHash(bytes)))
        }
    }

    /// Whether a grant still holds: its credential is still in the access file as it was, or its
    /// link has not expired and its key is still the service's. An answer that goes on (a live view,
    /// the events) ends when it no longer does.
    package func isValid(_ grant: AccessGrant, now: Int = AccessControl.now()) -> Bool {
        if let expires = grant.expires, now >= expires { return false }
        switch grant.source {
        case .open: return true
        case .credential(let hash): return state.withLock { $0.credentials[hash] } == grant
        case .link(let keyHash): return Self.keyHash(state.withLock { $0.linkKey }) == keyHash
        }
    }

    private static func keyHash(_ key: [UInt8]) -> String {
        Hex.encode(SHA256.hash(data: key))
    }

    /// A view link's text for `camera`, valid for `seconds`.
    package func makeLink(camera: String, seconds: Int, now: Int = AccessControl.now()) -> (text: String, expires: Int) {
        let expires = now + seconds
        let key = SymmetricKey(data: state.withLock { $0.linkKey })
        return (ViewLink(camera: camera, expires: expires).text(signedWith: key), expires)
    }

    /// Counts a refusal (for /metrics) and answers it.
    @discardableResult
    package func count(_ refusal: AccessRefusal) -> AccessRefusal {
        refusals.withLock { $0[refusal.reason, default: 0] += 1 }
        return refusal
    }

    /// Refusals so far, by reason, every reason listed (0 for those that never happened).
    package var refusalsByReason: [(reason: String, count: Int)] {
        let counts = refusals.withLock { $0 }
        return AccessRefusal.Reason.allCases.map { ($0.rawValue, counts[$0] ?? 0) }
    }

    /// Now, in seconds since 1970.
    package static func now() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now.tv_sec
    }

    private static func credentials(_ settings: Settings) throws -> [String: AccessGrant] {
        var credentials: [String: AccessGrant] = [:]
        if let path = settings.accessFilePath {
            for credential in try AccessFile.load(path).credentials {
                let hash = credential.sha256.lowercased()
                credentials[hash] = AccessGrant(name: credential.name, role: credential.role, cameras: credential.cameras.map(Set.init),
                                                source: .credential(hash: hash))
            }
        }
        if let token = settings.token {
            let hash = CredentialSecret.hash(token)
            credentials[hash] = AccessGrant(name: "token-file", role: .admin, cameras: nil, source: .credential(hash: hash))
        }
        return credentials
    }

    /// The key in --link-key-file (made and written there when the file does not exist yet), or a new key.
    static func linkKey(_ settings: Settings) throws -> [UInt8] {
        guard let path = settings.linkKeyPath else { return SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) } }
        if let bytes = try PrivateFile.read(path, option: "--link-key-file") {
            let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
            guard let key = Hex.decode(text), key.count >= 32 else {
                throw CommandFailure("--link-key-file \(path) holds no key (64 hexadecimal digits); remove it and one is made", status: .dataError)
            }
            return key
        }
        return try rotateLinkKey(path)
    }

    /// Writes a new key to `path`, ending every link signed with the old one once the service reads it.
    @discardableResult
    package static func rotateLinkKey(_ path: String) throws -> [UInt8] {
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        try PrivateFile.write(Array((Hex.encode(key) + "\n").utf8), to: path, option: "--link-key-file")
        return key
    }
}
