#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex, for state a capture loop shares with
/// other threads (counters, buffer bookkeeping).
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is reached only inside withLock, under `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// A copy of the value.
    var current: Value { withLock { $0 } }
}
