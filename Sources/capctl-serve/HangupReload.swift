import CapctlCommands
import CapctlService
import ServiceLifecycle
import UnixSignals

/// SIGHUP: reads the access file, the link key and the TLS certificate again,
/// without stopping a recording or closing a connection. New connections and
/// requests use what was read; what cannot be read leaves what was in force,
/// and says so (`reload-failed`). Each reload is an event: `service-reloaded`.
struct HangupReload: Service {
    let access: AccessControl
    let certificates: @Sendable () -> HTTPSCertificates?
    let events: ServiceEvents

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        for await _ in hangups.cancelOnGracefulShutdown() {
            var failures: [String] = []
            do { try access.reload() } catch { failures.append("\(error)") }
            do { try certificates()?.reload() } catch { failures.append("\(error)") }
            if failures.isEmpty {
                events.publish(ReloadEvent(event: "service-reloaded", time: EventTime.now(), tls: certificates() != nil))
            } else {
                StandardStream.error.write(failures.map { "capctl serve: SIGHUP: \($0); keeping what was in force\n" }.joined())
                events.publish(ReloadEvent(event: "reload-failed", time: EventTime.now(), tls: certificates() != nil,
                                           errors: failures))
            }
        }
    }
}

/// `service-reloaded` and `reload-failed`, on stdout and to /events.
struct ReloadEvent: Encodable {
    var event: String
    var time: String
    var tls: Bool
    var errors: [String]?
}
