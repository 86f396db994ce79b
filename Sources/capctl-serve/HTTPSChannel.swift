import CapctlCommands
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// HTTPS with HTTP/2 (ALPN `h2`) and HTTP/1.1, whose certificate can be replaced
/// while the service runs: each new connection is set up by the channel handler
/// made from the certificate read last, and connections already open keep theirs.
struct HTTPSChannel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let handler: HTTP2UpgradeChannel
        let value: HTTP2UpgradeChannel.Value
        var channel: any Channel { value.channel }
    }

    let certificates: HTTPSCertificates

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let handler = certificates.current
        return handler.setup(channel: channel, logger: logger).map { Value(handler: handler, value: $0) }
    }

    func handle(value: Value, logger: Logger) async {
        await value.handler.handle(value: value.value, logger: logger)
    }
}

/// The certificate chain and key of --tls-cert and --tls-key, and the channel handler made of them.
final class HTTPSCertificates: Sendable {
    let certificatePath: String
    let keyPath: String
    private let responder: HTTPChannelHandler.Responder
    private let handler: Mutex<HTTP2UpgradeChannel>

    init(certificatePath: String, keyPath: String, responder: @escaping HTTPChannelHandler.Responder) throws {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.responder = responder
        handler = Mutex(try Self.handler(certificatePath: certificatePath, keyPath: keyPath, responder: responder))
    }

    var current: HTTP2UpgradeChannel { handler.withLock { $0 } }

    /// Reads the files again; the next connection is served with them. Throws, and keeps the old ones, when they do not make a TLS configuration.
    func reload() throws {
        let new = try Self.handler(certificatePath: certificatePath, keyPath: keyPath, responder: responder)
        handler.withLock { $0 = new }
    }

    private static func handler(certificatePath: String, keyPath: String, responder: @escaping HTTPChannelHandler.Responder) throws -> HTTP2UpgradeChannel {
        let chain: [NIOSSLCertificate], key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw CommandFailure("--tls-cert \(certificatePath): no PEM certificate could be read (\(error))", status: .noInput)
        }
        guard !chain.isEmpty else { throw CommandFailure("--tls-cert \(certificatePath): the file holds no certificate", status: .noInput) }
        do {
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        } catch {
            throw CommandFailure("--tls-key \(keyPath): no PEM private key could be read (\(error))", status: .noInput)
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        do {
            // Streams live as long as their viewers: no idle or age limit on a connection with one open.
            return try HTTP2UpgradeChannel(tlsConfiguration: configuration, responder: responder)
        } catch {
            throw CommandFailure("--tls-cert \(certificatePath) and --tls-key \(keyPath) do not make a TLS configuration (is the key the certificate's?): \(error)",
                                 status: .dataError)
        }
    }
}
