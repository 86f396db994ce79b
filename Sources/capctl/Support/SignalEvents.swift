#if canImport(Glibc)
import Glibc
#endif

/// Signals as a stream of events for a long-running command: a handler
/// that only writes the signal's number into a pipe (all a handler may
/// safely do), and a thread that reads them and calls back in order.
/// `record` uses it for SIGINT/SIGTERM (stop), SIGHUP (next file),
/// SIGUSR1 (pause) and SIGUSR2 (resume).
final class SignalEvents: @unchecked Sendable {
    // @unchecked: `thread` is written once in init, before the reading thread starts; the write end is set before any handler is installed.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1
    private let readEnd: Int32
    private var thread = pthread_t()

    /// Installs handlers for `signals` and calls `handler` on a thread of
    /// its own for each one that arrives.
    init(_ signals: [Int32], handler: @escaping (Int32) -> Void) throws {
        var ends: [Int32] = [-1, -1]
        guard makePipe(&ends, nonBlocking: false) else {
            throw CommandFailure("cannot create a pipe for signal handling: \(String(cString: strerror(errno)))", status: .failure)
        }
        readEnd = ends[0]
        SignalEvents.writeEnd = ends[1]
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(SignalEvents.writeEnd, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        for signal in signals { sigaction(signal, &action, nil) }
        unblockSignals(signals)
        let box = Unmanaged.passRetained(Reader(descriptor: readEnd, handler: handler)).toOpaque()
        pthread_create(&thread, nil, { argument in
            let reader = Unmanaged<Reader>.fromOpaque(argument!).takeRetainedValue()
            reader.loop()
            return nil
        }, box)
        pthread_detach(thread)
    }

    private final class Reader {
        let descriptor: Int32
        let handler: (Int32) -> Void
        init(descriptor: Int32, handler: @escaping (Int32) -> Void) {
            self.descriptor = descriptor
            self.handler = handler
        }

        func loop() {
            var byte: UInt8 = 0
            while true {
                let count = read(descriptor, &byte, 1)
                if count == 1 { handler(Int32(byte)) } else if count < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}
