import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

/// Signals as a stream of events for a long-running command, on
/// CaptureKit's `SignalWatcher`: handlers write each signal into a pipe,
/// and a thread calls `handler` for each one, in order. `record` uses it for
/// SIGINT/SIGTERM (stop), SIGHUP (next file), SIGUSR1 (pause) and SIGUSR2
/// (resume); `snap` for SIGINT/SIGTERM.
final class SignalEvents: Sendable {
    /// Installs handlers for `signals` and calls `handler` on a thread of
    /// its own for each one that arrives, for the rest of the process's life.
    /// Throws a failure naming the call (`pipe`, `sigaction(SIGINT)`,
    /// `pthread_create(signals)`) when signals cannot be watched.
    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) throws {
        let watcher: SignalWatcher
        do {
            watcher = try SignalWatcher(signals, handler: handler)
        } catch {
            throw CommandFailure("cannot watch for signals: \(error)", status: .failure)
        }
        // Kept for the process's life: callers hold the result only as
        // `_ = signals`, after which Swift may release it at once, and a
        // watcher stopped then would give the signals their default action
        // (ending the process) in the middle of a recording.
        _ = Unmanaged.passRetained(watcher)
    }
}

/// SIGINT and SIGTERM as a readable descriptor, for `monitor`'s loop and
/// `set --hold`'s wait.
enum InterruptSignal {
    /// A pipe that becomes readable when SIGINT or SIGTERM arrives; the
    /// signals keep these handlers while the pipe lives.
    static func pipe() throws -> SignalPipe {
        do {
            return try SignalPipe([SIGINT, SIGTERM])
        } catch {
            throw CommandFailure("cannot watch for signals: \(error)", status: .failure)
        }
    }
}
