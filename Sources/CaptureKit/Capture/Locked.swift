#if canImport(Glibc)
import Glibc
#endif

/// A mutual-exclusion lock over a pthread mutex it owns, for classes that
/// keep shared state in their own stored properties. The command line uses
/// it too: it links only FoundationEssentials, which has no NSLock.
package final class Lock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronization itself; it lives on the
    // heap (a pthread mutex must not move) from init to deinit.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    package init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value behind a lock, for state a capture loop shares with other
/// threads (counters, buffer bookkeeping).
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is reached only inside withLock, under `lock`. It cannot be a checked
    // Mutex<Value> wrapper: some values are not Sendable (a device's configuration, an output's
    // state holding encoders and threads), and a body may hand what it takes from them to the one
    // thread that uses it next (a capture loop, a pool's borrower), as each user states.
    private let lock = Lock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// A copy of the value.
    var current: Value { withLock { $0 } }
}
