import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A joinable POSIX thread running one closure, for work that must end
/// before its owner lets go of what the closure uses (descriptors, pipes).
/// Creating it throws, naming `pthread_create(name)`, when no thread can be
/// made.
package final class SystemThread: Sendable {
    private let thread: pthread_t
    /// Whether the thread has been joined or detached (each may happen once).
    private let released = Mutex(false)

    /// Starts `body` on a new thread; `name` says what it is for in errors.
    package init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        thread = try Posix.createThread(name: name, body)
    }

    /// Whether the caller is this thread itself.
    package var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the thread to end. Safe to call more than once and from
    /// several threads; from the thread itself it does not wait (it would
    /// wait for ever) but lets the thread go when it ends.
    package func join() {
        let mine = released.withLock { released -> Bool in
            defer { released = true }
            return !released
        }
        guard mine else { return }
        if isCurrent {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    /// A thread nobody waited for lets go of its resources when it ends.
    deinit {
        if !released.withLock({ $0 }) { pthread_detach(thread) }
    }
}
