import CapctlCommands
import CapctlService
import CapctlWebRTC
import CaptureKit
import Dispatch
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs `capctl serve`: opens the devices (CaptureService), then serves the
/// HTTP API until SIGINT or SIGTERM, which finish every recording first.
struct HTTPServiceHost: ServiceHost {
    func run(_ configuration: ServiceConfiguration) throws -> ExitStatus {
        if let change = configuration.accessFileChange {
            let report = try AccessFileCommand.run(change, accessFilePath: configuration.accessFilePath, linkKeyPath: configuration.linkKeyPath)
            for line in report.output { StandardStream.output.write(line + "\n") }
            if let note = report.note { StandardStream.error.write("capctl serve: \(note)\n") }
            return .success
        }
        // Until HangupReload traps it, SIGHUP's default action would end the service (a reload sent as it starts).
        signal(SIGHUP, SIG_IGN)
        let access = try AccessControl(AccessControl.Settings(token: configuration.token, accessFilePath: configuration.accessFilePath,
                                                              linkKeyPath: configuration.linkKeyPath))
        if configuration.isReachableFromOtherMachines && configuration.tls == nil {
            StandardStream.error.write("capctl serve: warning: without --tls-cert and --tls-key, credentials and pictures travel in clear to \(configuration.listenDescription)\n")
        }
        let accessLog = try AccessLog(path: configuration.accessLogPath)
        let webRTC = configuration.webRTC.enabled ? GStreamerPeering.make(settings: configuration.webRTC) : nil
        let service = try CaptureService(configuration: configuration, webRTC: webRTC)
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<Void, any Error>
            do {
                try await serve(service, configuration: configuration, access: access, accessLog: accessLog)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        // Stopped by a signal: the recordings are finished by now. Failed to listen: finish them here.
        service.shutdown()
        let result = outcome.withLock { $0 }
        if case .failure(let error) = result {
            if let failure = error as? CommandFailure { throw failure }
            throw CommandFailure(ServiceFailure.listen(error, address: configuration.listenDescription).description, status: .unavailable)
        }
        service.events.publish(ServiceStateEvent(event: "service-stopped", time: ServiceStateEvent.now()))
        return .success
    }

    private func serve(_ service: any CaptureServing, configuration: ServiceConfiguration, access: AccessControl,
                       accessLog: AccessLog) async throws {
        var logger = Logger(label: "capctl-serve") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = .error
        let router = ServiceRouter.make(service: service, configuration: configuration, access: access, accessLog: accessLog)
        // The certificates of HTTPS, made when the server is built, reached by SIGHUP's reload.
        let certificates = Mutex<HTTPSCertificates?>(nil)
        let server: HTTPServerBuilder
        if let tls = configuration.tls {
            // Read now, so that a certificate that cannot work stops the service before it listens.
            _ = try HTTPSCertificates(certificatePath: tls.certificatePath, keyPath: tls.keyPath) { _, _, _ in }
            server = HTTPServerBuilder { responder in
                let made = try HTTPSCertificates(certificatePath: tls.certificatePath, keyPath: tls.keyPath, responder: responder)
                certificates.withLock { $0 = made }
                return HTTPSChannel(certificates: made)
            }
        } else {
            server = .http1()
        }
        // SO_REUSEADDR (Hummingbird's default): a restarted service binds at once over its
        // old connections in TIME_WAIT, while a second listener on the port is still refused.
        let application = Application(
            router: router,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: "capctl"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                service.events.publish(ServiceStateEvent(event: "service-started", time: ServiceStateEvent.now(),
                                                         address: configuration.host, port: port, folder: service.folderPath,
                                                         inputs: service.inputDocuments.map(\.device),
                                                         scheme: configuration.tls == nil ? "http" : "https"))
            },
            logger: logger
        )
        // The capture stops first (its graceful shutdown ends the event streams,
        // which would otherwise hold the server's), then the server.
        let reload = HangupReload(access: access, certificates: { certificates.withLock { $0 } }, events: service.events)
        let group = ServiceGroup(configuration: .init(services: [application, CaptureShutdown(service: service), reload],
                                                      gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

/// Finishes the recordings when the service is asked to stop.
private struct CaptureShutdown: Service {
    let service: any CaptureServing

    func run() async throws {
        try? await gracefulShutdown()
        await Task.detached { service.shutdown() }.value
    }
}

/// `service-started` and `service-stopped`, on stdout and to /events.
struct ServiceStateEvent: Encodable {
    var event: String
    var time: String
    var address: String?
    var port: Int?
    var folder: String?
    var inputs: [String]?
    /// `http` or `https`.
    var scheme: String?

    static func now() -> String { EventTime.now() }
}

/// Why the service could not run, as one line and an exit status.
enum ServiceFailure: Error, CustomStringConvertible {
    case listen(any Error, address: String)

    var description: String {
        switch self {
        case .listen(let error, let address):
            if let socketError = error as? IOError, socketError.errnoCode == EADDRINUSE {
                return "cannot listen on \(address): the address is in use (another service on this port?); choose another with --listen"
            }
            return "cannot listen on \(address): \(error)"
        }
    }
}
