import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A joinable POSIX thread running one closure: the session's capture loops
/// and each output's writing loop run on these, so that stopping can wait
/// for them to end.
final class CaptureThread: Sendable {
    /// The thread, when one was made.
    private let thread: pthread_t?
    /// Whether someone joined it (or it was detached): it is let go of once.
    private let joined = Atomic<Bool>(false)

    /// Why no thread could be made (`pthread_create(NAME)`), if none was;
    /// the body then ran on the creating thread instead, so that its work
    /// is not lost.
    let startFailure: SystemCallError?

    /// Starts `body` on a new thread, or throws `pthread_create(NAME)` when
    /// none can be made: for callers that can refuse what they were asked.
    static func start(name: String, _ body: @escaping () -> Void) throws(SystemCallError) -> CaptureThread {
        CaptureThread(started: try Posix.createThread(name: name, body))
    }

    private init(started thread: pthread_t) {
        self.thread = thread
        startFailure = nil
    }

    /// Starts `body` on a new thread; `name` says what it is for. For
    /// callers with no way to refuse: see `startFailure`.
    init(name: String, _ body: @escaping () -> Void) {
        do {
            thread = try Posix.createThread(name: name, body)
            startFailure = nil
        } catch {
            thread = nil
            startFailure = error
            body()
        }
    }

    /// Waits for the thread to end. Safe to call more than once and from
    /// several threads; from the thread itself (a delegate that starts the
    /// next recording from the last one's callback) it does not wait.
    func join() {
        guard let thread, !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    /// A thread nobody waited for lets go of its resources when it ends.
    deinit {
        if let thread, !joined.load(ordering: .acquiring) { pthread_detach(thread) }
    }
}
