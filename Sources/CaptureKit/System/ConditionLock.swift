#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with one condition variable, for state that threads wait
/// on (a queue's items, a call under way). Both live on the heap, since a
/// pthread mutex or condition must not move, from init to deinit. Timed
/// waits run on CLOCK_MONOTONIC: a change of the wall clock (NTP, the user)
/// neither cuts them short nor stretches them.
final class ConditionLock: @unchecked Sendable {
    // @unchecked: the mutex and condition are the synchronization itself;
    // they are made in init, destroyed in deinit and never move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Runs `body` holding the mutex; the waits below are for inside it.
    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a signal or broadcast (or a spurious wakeup: callers wait in
    /// a loop on their own condition). Only inside `withLock`.
    func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// `wait()` until `deadline` (CLOCK_MONOTONIC nanoseconds, as
    /// `MonotonicClock.nowNanoseconds()`); answers false once it has passed.
    /// Only inside `withLock`.
    func wait(untilMonotonicNanoseconds deadline: Int64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    /// Wakes one waiter.
    func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter.
    func broadcast() { pthread_cond_broadcast(condition) }
}
