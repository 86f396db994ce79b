#if canImport(Glibc)
import Glibc
#endif

/// A lock for the command line's classes that keep shared state in their
/// own stored properties: NSLock's place, which is Foundation's, and capctl
/// links only FoundationEssentials (all of Foundation, with ICU, doubles the
/// memory a start of a probe command takes).
final class Lock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronization itself; it lives on the
    // heap (a pthread mutex must not move) from init to deinit.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
