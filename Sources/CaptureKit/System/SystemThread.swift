#if canImport(Glibc)
import Glibc
#endif

/// A joinable POSIX thread running one closure, for work that must end
/// before its owner lets go of what the closure uses (descriptors, pipes).
/// Creating it throws, naming `pthread_create(name)`, when no thread can be
/// made.
package final class SystemThread: Sendable {
    private let thread: pthread_t
    /// Who lets the thread go (joined or detached, once); its condition wakes
    /// the callers of `join()` that wait for the one joining.
    private enum Release { case none, joining, joined, detached }
    private let released = Locked(Release.none)

    /// Starts `body` on a new thread; `name` says what it is for in errors.
    package init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        thread = try Posix.createThread(name: name, body)
    }

    /// Whether the caller is this thread itself.
    package var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the thread to end. Safe to call more than once and from
    /// several threads: each returns once the thread has ended (a second
    /// caller waits for the first one's join). From the thread itself it
    /// does not wait (it would wait for ever) but lets the thread go when it ends.
    package func join() {
        let current = isCurrent
        let mine = released.withLock { released -> Bool in
            guard released == .none else { return false }
            released = current ? .detached : .joining
            return true
        }
        guard mine else {
            if !current { released.withLock(waitingWhile: { $0 == .joining }) { _, _ in } }
            return
        }
        if current {
            pthread_detach(thread)
            return
        }
        pthread_join(thread, nil)
        released.withLock { released in
            released = .joined
            self.released.broadcast()
        }
    }

    /// A thread nobody waited for lets go of its resources when it ends.
    deinit {
        if released.withLock({ $0 == .none }) { pthread_detach(thread) }
    }
}
