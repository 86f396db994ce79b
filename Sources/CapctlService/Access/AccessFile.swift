import CapctlCommands
import FoundationEssentials

/// `--access-file`: the service's credentials, each with its role and the cameras
/// it covers, kept as SHA-256 hashes of their secrets (a secret is shown once,
/// when it is made, and the file never holds one). A JSON document, mode 0600:
///
///     {"credentials": [
///       {"name": "door-viewer", "role": "view", "cameras": ["0"], "sha256": "9f86…", "created": "2026-11-29T10:00:00Z"},
///       {"name": "operator", "role": "record", "sha256": "…"}
///     ]}
///
/// Without `cameras` a credential covers every camera.
package struct AccessFile: Codable, Sendable, Equatable {
    package struct Credential: Codable, Sendable, Equatable {
        /// Unique in the file; shown in the access log's refusals and the metrics' reasons, never secret.
        package var name: String
        package var role: AccessRole
        /// Device ids (as GET /devices lists them); nil: every camera.
        package var cameras: [String]?
        /// The SHA-256 of the secret, lowercase hexadecimal.
        package var sha256: String
        /// When it was made (RFC 3339), for the reader.
        package var created: String?
    }

    package var credentials: [Credential] = []

    package init(credentials: [Credential] = []) {
        self.credentials = credentials
    }

    /// The file at `path`; an empty one when there is no file yet.
    package static func load(_ path: String) throws -> AccessFile {
        guard let bytes = try PrivateFile.read(path, option: "--access-file") else { return AccessFile() }
        let file: AccessFile
        do {
            file = try JSONDecoder().decode(AccessFile.self, from: Data(bytes))
        } catch {
            throw CommandFailure("--access-file \(path) is not an access file: \(Self.reason(error)); see 'capctl serve --help' (ACCESS)", status: .dataError)
        }
        try file.check(path)
        return file
    }

    /// Writes it to `path` (mode 0600, replacing the old file in one step).
    package func save(_ path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self)
        try PrivateFile.write(Array(data) + [0x0A], to: path, option: "--access-file")
    }

    /// Adds a credential and answers its secret, which nothing keeps: the caller shows it once.
    package mutating func add(name: String, role: AccessRole, cameras: [String]?) throws -> String {
        guard Self.isName(name) else {
            throw CommandFailure("--add-credential '\(name)': a name is 1 to 64 letters, digits, '.', '_' or '-'", status: .usage)
        }
        guard !credentials.contains(where: { $0.name == name }) else {
            throw CommandFailure("--add-credential \(name): the access file already has a credential of that name; remove it first (--remove-credential \(name)) to replace it",
                                 status: .usage)
        }
        let secret = CredentialSecret.make()
        credentials.append(Credential(name: name, role: role, cameras: cameras?.sorted(), sha256: CredentialSecret.hash(secret),
                                      created: EventTime.now()))
        return secret
    }

    /// Removes the credential of that name; false if there is none.
    package mutating func remove(name: String) -> Bool {
        let before = credentials.count
        credentials.removeAll { $0.name == name }
        return credentials.count < before
    }

    private func check(_ path: String) throws {
        var names = Set<String>()
        for credential in credentials {
            guard Self.isName(credential.name) else {
                throw CommandFailure("--access-file \(path): '\(credential.name)' is not a credential name (1 to 64 letters, digits, '.', '_' or '-')", status: .dataError)
            }
            guard names.insert(credential.name).inserted else {
                throw CommandFailure("--access-file \(path): two credentials are named \(credential.name)", status: .dataError)
            }
            guard let digest = Hex.decode(credential.sha256), digest.count == 32 else {
                throw CommandFailure("--access-file \(path): credential \(credential.name) has no SHA-256 (64 hexadecimal digits) in sha256", status: .dataError)
            }
        }
    }

    static func isName(_ name: String) -> Bool {
        (1...64).contains(name.count) && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty: "not JSON"
        case DecodingError.dataCorrupted(let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, _): "a credential has no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        default: "\(error)"
        }
    }
}
