import Foundation
import Synchronization
import Glibc
import Testing
@testable import CaptureKit

/// Signals turned into pipe bytes and callbacks (`SignalPipe`,
/// `SignalWatcher`), and threads whose creation is checked (`SystemThread`).
/// Serialized, and each test on signals of its own: a process has one
/// disposition per signal, and the tests run in one process.
@Suite(.serialized) struct SignalWatcherTests {
    /// The handler `signal` has now (nil: SIG_DFL), as an address to compare.
    private func currentHandler(_ signal: Int32) -> UnsafeRawPointer? {
        var action = sigaction()
        sigaction(signal, nil, &action)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: UnsafeRawPointer?.self)
    }

    /// The signal numbers a watcher's handler was called with, in order.
    private final class Received: Sendable {
        let numbers = Mutex<[Int32]>([])
        let arrived = DispatchSemaphore(value: 0)

        func record(_ signal: Int32) {
            numbers.withLock { $0.append(signal) }
            arrived.signal()
        }
    }

    @Test func aSignalSentToTheProcessReachesTheHandlerOnTheWatchersThread() throws {
        let before = currentHandler(SIGUSR1)
        let received = Received()
        let watcher = try SignalWatcher([SIGUSR1]) { signal in received.record(signal) }
        #expect(currentHandler(SIGUSR1) != before)
        kill(getpid(), SIGUSR1)
        #expect(received.arrived.wait(timeout: .now() + 5) == .success, "the handler was not called")
        raise(SIGUSR1)
        #expect(received.arrived.wait(timeout: .now() + 5) == .success, "the handler was not called again")
        watcher.stop()
        #expect(received.numbers.withLock { $0 } == [SIGUSR1, SIGUSR1])
        // Stopped: the thread was joined and the former disposition is back.
        #expect(currentHandler(SIGUSR1) == before)
        watcher.stop()
    }

    @Test func stoppingFromTheHandlerItselfDoesNotWaitForItself() throws {
        let received = Received()
        let holder = Mutex<SignalWatcher?>(nil)
        let watcher = try SignalWatcher([SIGUSR1]) { signal in
            holder.withLock { $0 }?.stop()
            received.record(signal)
        }
        holder.withLock { $0 = watcher }
        raise(SIGUSR1)
        #expect(received.arrived.wait(timeout: .now() + 5) == .success, "the handler did not return")
        watcher.stop()
        holder.withLock { $0 = nil }
    }

    @Test func aSignalPipeBecomesReadableWithTheSignalsNumber() throws {
        let before = currentHandler(SIGUSR2)
        let pipe = try SignalPipe([SIGUSR2])
        #expect(!pipe.hasPendingSignal)
        #expect(try pipe.wait(timeout: 0) == [])
        raise(SIGUSR2)
        raise(SIGUSR2)
        #expect(pipe.hasPendingSignal)
        #expect(try pipe.wait(timeout: 5000) == [SIGUSR2, SIGUSR2])
        #expect(!pipe.hasPendingSignal)
        pipe.close()
        #expect(currentHandler(SIGUSR2) == before)
    }

    @Test func aThreadThatCannotBeMadeIsAnErrorNamingTheCallAndNothingStaysInstalled() throws {
        let before = currentHandler(SIGWINCH)
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .always(errno: EAGAIN)
            driver.forcedCallPrefix = "pthread_create"
            #expect(throws: SystemCallError(call: "pthread_create(signals)", errno: EAGAIN)) {
                _ = try SignalWatcher([SIGWINCH]) { _ in }
            }
            #expect(driver.trace.contains("sigaction(signal \(SIGWINCH))"))
        }
        #expect(currentHandler(SIGWINCH) == before)
    }

    @Test func aPipeThatCannotBeMadeIsAnErrorNamingTheCall() throws {
        let before = currentHandler(SIGWINCH)
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .always(errno: EMFILE)
            driver.forcedCallPrefix = "pipe"
            #expect(throws: SystemCallError(call: "pipe", errno: EMFILE)) {
                _ = try SignalWatcher([SIGWINCH]) { _ in }
            }
            // Refused before any handler was installed.
            #expect(driver.trace == ["pipe"])
        }
        #expect(currentHandler(SIGWINCH) == before)
    }

    @Test func aSignalNumberOutsideTheTableIsRefused() {
        #expect(throws: SystemCallError(call: "sigaction(signal 65)", errno: EINVAL)) {
            _ = try SignalPipe([65])
        }
    }

    @Test func aSystemThreadRunsItsBodyAndJoinWaitsForIt() throws {
        let done = Mutex(false)
        let thread = try SystemThread(name: "test") {
            Posix.sleep(nanoseconds: 100_000_000)
            done.withLock { $0 = true }
        }
        #expect(!thread.isCurrent)
        thread.join()
        #expect(done.withLock { $0 })
        thread.join()
    }

    @Test func aSystemThreadThatCannotBeMadeNamesItsCall() {
        let ran = Mutex(false)
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .counted(errno: EAGAIN, count: 1)
            #expect(throws: SystemCallError(call: "pthread_create(worker)", errno: EAGAIN)) {
                _ = try SystemThread(name: "worker") { ran.withLock { $0 = true } }
            }
        }
        #expect(!ran.withLock { $0 })
    }
}
