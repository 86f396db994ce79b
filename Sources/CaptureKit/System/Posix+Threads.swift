#if canImport(Glibc)
import Glibc
#endif

// Threads and signal dispositions, through the same checked runner as the
// other calls: pthread_* and sigaction failures throw `SystemCallError`
// naming the call, and tests can force them to fail (`SystemCallMocking`).
extension Posix {
    /// The closure a new thread runs, carried through pthread_create's one pointer.
    private final class ThreadBody {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// pthread_create(3): starts `body` on a new joinable thread, reported as
    /// `pthread_create(name)` when it cannot be made (EAGAIN: no threads left).
    /// The caller joins or detaches the thread answered.
    static func createThread(name: String, _ body: @escaping () -> Void) throws(SystemCallError) -> pthread_t {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        do {
            // pthread_* answer the error number itself, 0 for success; EINTR is never one of them.
            _ = try checkedCall({ "pthread_create(\(name))" }, retryingInterrupts: false, failed: { $0 != 0 }, errno: { $0 }) {
                pthread_create(&thread, nil, { argument in
                    Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().body()
                    return nil
                }, box)
            }
        } catch {
            // No thread took the body: let it go here.
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw error
        }
        return thread
    }

    /// sigaction(2): makes `handler` the handler of `signal` (SA_RESTART, no
    /// signals masked while it runs); answers the disposition it replaced.
    static func installSignalHandler(_ signal: Int32, _ handler: @convention(c) (Int32) -> Void) throws(SystemCallError) -> sigaction {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        var previous = sigaction()
        try systemCall("sigaction(\(signalName(signal)))") { cSigaction(signal, &action, &previous) }
        return previous
    }

    /// sigaction(2): puts back a disposition `installSignalHandler` answered.
    static func restoreSignalAction(_ signal: Int32, _ action: sigaction) throws(SystemCallError) {
        var action = action
        try systemCall("sigaction(\(signalName(signal)))") { cSigaction(signal, &action, nil) }
    }

    /// pthread_sigmask(3) SIG_UNBLOCK: `signals` reach the calling thread (and
    /// the threads it starts after). A process inherits its blocked set from
    /// whoever started it, and a parent that blocked SIGINT for itself would
    /// otherwise leave the process deaf to it.
    static func unblockSignals(_ signals: [Int32]) throws(SystemCallError) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        _ = try checkedCall({ "pthread_sigmask" }, retryingInterrupts: false, failed: { $0 != 0 }, errno: { $0 }) {
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
        }
    }

    /// pthread_sigmask(3) SIG_BLOCK: `signals` wait, pending, until the
    /// calling thread unblocks them (a handler being replaced by another
    /// loses none that come meanwhile).
    package static func blockSignals(_ signals: [Int32]) throws(SystemCallError) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        _ = try checkedCall({ "pthread_sigmask" }, retryingInterrupts: false, failed: { $0 != 0 }, errno: { $0 }) {
            pthread_sigmask(SIG_BLOCK, &set, nil)
        }
    }

    /// `SIGINT` for 2 and the other signals capctl handles; `signal 40` else.
    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGHUP: "SIGHUP"
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        case SIGPIPE: "SIGPIPE"
        default: "signal \(signal)"
        }
    }
}

// sigaction names both a struct and a function in Glibc; this forwarder
// reaches the function from inside `Posix`.
private func cSigaction(_ signal: Int32, _ action: UnsafePointer<sigaction>?, _ previous: UnsafeMutablePointer<sigaction>?) -> Int32 {
    sigaction(signal, action, previous)
}
