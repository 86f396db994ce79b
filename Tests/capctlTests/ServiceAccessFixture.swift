import Foundation

/// A test certificate authority and a server certificate for 127.0.0.1 it signed,
/// made with openssl in a folder of their own; `renew()` signs a new server certificate.
final class TestCertificates {
    private let scratch: ServiceSecurityFixture.Scratch
    var folder: String { scratch.path }
    var caFile: String { folder + "/ca.pem" }
    var certificateFile: String { folder + "/server.pem" }
    var keyFile: String { folder + "/server.key" }

    init() throws {
        scratch = try ServiceSecurityFixture.Scratch()
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", folder + "/ca.key",
                     "-out", caFile, "-days", "2", "-subj", "/CN=capctl test CA"])
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\n".utf8).write(to: URL(fileURLWithPath: folder + "/ext"))
        try renew()
    }

    /// Signs a new key's certificate into the server files; answers its serial number.
    @discardableResult
    func renew() throws -> String {
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", folder + "/next.key",
                     "-out", folder + "/next.csr", "-subj", "/CN=127.0.0.1"])
        try openssl(["x509", "-req", "-in", folder + "/next.csr", "-CA", caFile, "-CAkey", folder + "/ca.key", "-CAcreateserial",
                     "-out", folder + "/next.pem", "-days", "2", "-extfile", folder + "/ext"])
        chmod(folder + "/next.key", 0o600)
        // Renamed into place, as a certificate manager does, so that the service never reads half a file.
        rename(folder + "/next.key", keyFile)
        rename(folder + "/next.pem", certificateFile)
        return try serial(ofFile: certificateFile)
    }

    /// The base64 SHA-256 of the server certificate's public key, as Chromium's --ignore-certificate-errors-spki-list takes it.
    func spki() throws -> String {
        try tool("sh", ["-c", "openssl x509 -pubkey -noout -in '\(certificateFile)' | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func serial(ofFile path: String) throws -> String {
        try openssl(["x509", "-in", path, "-noout", "-serial"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The serial number of the certificate a new TLS connection to `port` is given, and the protocol ALPN chose.
    func served(port: Int) throws -> (serial: String, alpn: String) {
        let pem = folder + "/served.pem"
        let handshake = try tool("sh", ["-c", "openssl s_client -connect 127.0.0.1:\(port) -CAfile \(caFile) -alpn h2,http/1.1 </dev/null 2>/dev/null"])
        guard let begin = handshake.range(of: "-----BEGIN CERTIFICATE-----"), let end = handshake.range(of: "-----END CERTIFICATE-----") else {
            throw CocoaError(.fileReadCorruptFile)
        }
        try String(handshake[begin.lowerBound..<end.upperBound]).write(toFile: pem, atomically: true, encoding: .utf8)
        let alpn = handshake.split(separator: "\n").first { $0.hasPrefix("ALPN protocol:") }.map { String($0.dropFirst(15)) } ?? ""
        return (try serial(ofFile: pem), alpn.trimmingCharacters(in: .whitespaces))
    }

    @discardableResult
    private func openssl(_ arguments: [String]) throws -> String {
        try tool("openssl", arguments)
    }

    /// What `runTool` printed on stdout, or an error when it failed.
    private func tool(_ name: String, _ arguments: [String]) throws -> String {
        let result = try runTool(name, arguments)
        guard result.status == 0 else { throw ServiceFixtureError.requestFailed("\(name) \(arguments.first ?? "")", result.status) }
        return result.stdout
    }
}

/// An access file of credentials, made with `capctl serve --add-credential`, and their secrets.
final class TestCredentials {
    private let scratch: ServiceSecurityFixture.Scratch
    var folder: String { scratch.path }
    var accessFile: String { folder + "/access.json" }
    var linkKeyFile: String { folder + "/link.key" }
    /// Secrets by credential name.
    private(set) var secrets: [String: String] = [:]

    init(_ credentials: [(name: String, role: String, cameras: [String])]) throws {
        scratch = try ServiceSecurityFixture.Scratch()
        for credential in credentials {
            let made = try CapctlRun.run(["serve", "--access-file", accessFile, "--add-credential", credential.name, "--role", credential.role]
                + credential.cameras.flatMap { ["--credential-camera", $0] })
            let lines = made.stdout.split(separator: "\n")
            guard made.status == 0, lines.count == 1 else { throw ServiceFixtureError.requestFailed("--add-credential: \(made.stderr)", made.status) }
            secrets[credential.name] = String(lines[0])
        }
    }

    func bearer(_ name: String) -> [String: String] { ["Authorization": "Bearer \(secrets[name]!)"] }
}
