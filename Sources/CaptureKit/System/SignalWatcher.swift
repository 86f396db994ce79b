import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A thread that waits for signals and calls back with each: the handlers
/// write into a `SignalPipe`, and a thread of the watcher's own polls that
/// pipe and a finish pipe, calling `handler` with each signal's number in
/// the order they came, until `stop()`. The handler runs on that thread,
/// outside any signal handler, so it may do anything (lock, allocate, stop
/// a recording).
package final class SignalWatcher: Sendable {
    private let pipes: Pipes
    private let thread: SystemThread

    /// The two pipes, closed by the watching thread as it ends, so that no
    /// descriptor is closed while it polls it.
    private final class Pipes: Sendable {
        let signals: SignalPipe
        /// Made readable by `stop()`; the thread ends when it is.
        let finish: WakeupPipe
        /// Whether the pipes are closed (the thread ended), and whether a stop was asked for.
        let state = Mutex((closed: false, stopping: false))

        init(signals: SignalPipe, finish: WakeupPipe) {
            self.signals = signals
            self.finish = finish
        }

        func close() {
            signals.close()
            finish.close()
        }
    }

    /// Installs handlers for `signals` and starts the thread. Throws the
    /// call that failed (`pipe`, `sigaction(SIGINT)`, `pthread_create(signals)`),
    /// having undone what was done.
    package init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) throws(SystemCallError) {
        let signalPipe = try SignalPipe(signals)
        let finish: WakeupPipe
        do {
            finish = try WakeupPipe.make()
        } catch {
            signalPipe.close()
            throw error
        }
        let pipes = Pipes(signals: signalPipe, finish: finish)
        do {
            thread = try SystemThread(name: "signals") {
                Self.watch(pipes, handler: handler)
                pipes.state.withLock { state in
                    state.closed = true
                    pipes.close()
                }
            }
        } catch {
            pipes.close()
            throw error
        }
        self.pipes = pipes
    }

    /// The thread's loop: one poll for both pipes, so a finish is seen at
    /// once, and pending signals are read all together.
    private static func watch(_ pipes: Pipes, handler: (Int32) -> Void) {
        var entries = [pollfd(fd: pipes.signals.readEnd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: pipes.finish.readEnd, events: Int16(POLLIN), revents: 0)]
        while true {
            entries[0].revents = 0
            entries[1].revents = 0
            guard (try? Posix.poll(&entries, timeout: -1)) != nil else { return }
            if entries[1].revents != 0 { return }
            if entries[0].revents & Int16(POLLIN) != 0 {
                for signal in pipes.signals.readArrived() { handler(signal) }
            } else if entries[0].revents != 0 {
                return
            }
        }
    }

    /// Ends the thread and waits for it, which puts the signals' former
    /// dispositions back (called from the handler itself it does not wait:
    /// the thread ends when the handler returns). Safe to call more than once.
    package func stop() {
        pipes.state.withLock { state in
            // Under the lock: the thread closes the pipe only with it held.
            if !state.closed && !state.stopping { pipes.finish.wake() }
            state.stopping = true
        }
        thread.join()
    }

    deinit {
        stop()
    }
}
