import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The write end of the self-pipe each signal's number is written to, by
/// signal number (1 ... 64); -1: none.
// nonisolated(unsafe): a signal handler may touch only plain memory (no
// lock, no allocation, no reference counting), so this is a C array made
// once and never freed. An entry is written before the handler that reads
// it is installed and after it is removed, under `signalPipeTable`'s lock;
// an aligned Int32 is read and written whole. (Made on first use, which is
// a pipe's init: before any handler can read it.)
nonisolated(unsafe) private let signalWriteEnds: UnsafeMutablePointer<Int32> = {
    let table = UnsafeMutablePointer<Int32>.allocate(capacity: 65)
    table.initialize(repeating: -1, count: 65)
    return table
}()

/// Serializes changes to `signalWriteEnds` and to the signals' dispositions.
private let signalPipeTable = Mutex(())

/// The handler every `SignalPipe` installs: the signal's number, one byte,
/// into the pipe of its signal. write(2) is async-signal-safe; errno is kept
/// for the code the signal interrupted.
private let signalPipeHandler: @convention(c) (Int32) -> Void = { number in
    guard number > 0 && number < 65 else { return }
    let descriptor = signalWriteEnds[Int(number)]
    guard descriptor >= 0 else { return }
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(descriptor, &byte, 1)
    errno = saved
}

/// Signals turned into a readable descriptor (the self-pipe trick): a
/// handler for each signal writes its number into a non-blocking pipe, all a
/// handler may safely do, and the program polls and reads the pipe where it
/// likes. `close()` (or the end of the pipe's life) puts the signals'
/// former dispositions back. One pipe hears a given signal at a time: a
/// later pipe for the same signal takes it over until it closes.
package final class SignalPipe: Sendable {
    /// The signals watched.
    package let signals: [Int32]
    /// The end to poll: readable while a signal's byte waits in it.
    package let readEnd: Int32
    private let writeEnd: Int32
    /// The dispositions to put back, until closed (nil after).
    private let replaced: Mutex<[(signal: Int32, action: SignalAction)]?>

    /// A sigaction kept to be put back: plain values and a C function
    /// pointer, which the compiler checks as Sendable.
    private struct SignalAction: Sendable {
        let action: sigaction
    }

    /// Installs handlers for `signals` (SA_RESTART) and unblocks them in
    /// the calling thread. Throws the failed call (`pipe`, `sigaction(SIGINT)` …),
    /// having undone what was done.
    package init(_ signals: [Int32]) throws(SystemCallError) {
        if let invalid = signals.first(where: { $0 <= 0 || $0 >= 65 }) {
            // What sigaction(2) would answer; checked here, as the table has room for 1 ... 64 only.
            throw SystemCallError(call: "sigaction(\(Posix.signalName(invalid)))", errno: EINVAL)
        }
        self.signals = signals
        let ends = try Posix.nonBlockingPipe()
        readEnd = ends.readEnd
        writeEnd = ends.writeEnd
        let installed = signalPipeTable.withLock { _ -> Result<[(signal: Int32, action: SignalAction)], SystemCallError> in
            var done: [(signal: Int32, action: SignalAction)] = []
            do throws(SystemCallError) {
                for signal in signals {
                    signalWriteEnds[Int(signal)] = ends.writeEnd
                    done.append((signal, SignalAction(action: try Posix.installSignalHandler(signal, signalPipeHandler))))
                }
                try Posix.unblockSignals(signals)
                return .success(done)
            } catch {
                Self.restore(done, writeEnd: ends.writeEnd)
                for signal in signals where signalWriteEnds[Int(signal)] == ends.writeEnd { signalWriteEnds[Int(signal)] = -1 }
                return .failure(error)
            }
        }
        switch installed {
        case .success(let done):
            replaced = Mutex(done)
        case .failure(let error):
            try? Posix.close(ends.readEnd)
            try? Posix.close(ends.writeEnd)
            throw error
        }
    }

    deinit { close() }

    /// Puts the former dispositions back and closes the pipe. Safe to call more than once.
    package func close() {
        guard let done = replaced.withLock({ replaced in defer { replaced = nil }; return replaced }) else { return }
        signalPipeTable.withLock { _ in Self.restore(done, writeEnd: writeEnd) }
        try? Posix.close(readEnd)
        try? Posix.close(writeEnd)
    }

    /// Restores dispositions in reverse order, leaving alone a signal a later pipe took over.
    private static func restore(_ done: [(signal: Int32, action: SignalAction)], writeEnd: Int32) {
        for (signal, action) in done.reversed() where signalWriteEnds[Int(signal)] == writeEnd {
            try? Posix.restoreSignalAction(signal, action.action)
            signalWriteEnds[Int(signal)] = -1
        }
    }

    /// Whether a signal has arrived that was not read yet (nothing is read).
    package var hasPendingSignal: Bool {
        var entries = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        return ((try? Posix.poll(&entries, timeout: 0)) ?? 0) > 0
    }

    /// The signals that arrived since the last read, oldest first, without waiting.
    package func readArrived() -> [Int32] {
        var arrived: [Int32] = []
        var bytes = [UInt8](repeating: 0, count: 64)
        while let count = try? Posix.read(readEnd, into: &bytes), count > 0 {
            arrived += bytes.prefix(count).map { Int32($0) }
        }
        return arrived
    }

    /// Waits until a signal arrives (or `milliseconds` pass; -1: for ever) and
    /// answers the signals that arrived, oldest first (empty on timeout).
    package func wait(timeout milliseconds: Int32 = -1) throws(SystemCallError) -> [Int32] {
        var entries = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        guard try Posix.poll(&entries, timeout: milliseconds) > 0 else { return [] }
        return readArrived()
    }
}
