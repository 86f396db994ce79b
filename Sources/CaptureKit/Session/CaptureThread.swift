#if canImport(Glibc)
import Glibc
#endif

/// A joinable POSIX thread running one closure: the session's capture loops
/// and each output's writing loop run on these, so that stopping can wait
/// for them to end.
final class CaptureThread: @unchecked Sendable {
    // @unchecked: `thread`, `started` and `joined` are touched only by the thread that made it (start in init, join from its owner).
    private var thread = pthread_t()
    private var started = false
    private var joined = false

    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread; `name` says what it is for.
    init(name: String, _ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let status = pthread_create(&thread, nil, { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        if status == 0 {
            started = true
        } else {
            // No thread: run the body to completion here rather than lose it.
            Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
        }
    }

    /// Waits for the thread to end. Safe to call more than once, from one thread.
    func join() {
        guard started, !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }
}
