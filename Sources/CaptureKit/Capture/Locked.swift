import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A mutual-exclusion lock, for classes that keep shared state in their own
/// stored properties. The command line uses it too: it links only
/// FoundationEssentials, which has no NSLock. It holds a `Mutex` with no
/// value of its own, so it is checked Sendable; the state it guards is
/// reached only inside `withLock`.
package final class Lock: Sendable {
    private let mutex = Mutex<Void>(())

    package init() {}

    /// Runs `body` holding the lock.
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try mutex.withLock { _ throws(E) -> T in try body() }
    }
}

/// A value behind a lock, for state a capture loop shares with other
/// threads (counters, buffer bookkeeping), which threads may also wait on
/// (a queue's items, a call under way): `withLock(waitingWhile:…)` waits
/// on the lock's one condition variable until `signal()` or `broadcast()`.
/// Mutex and condition live on the heap, since they must not move, from
/// init to deinit. Timed waits run on CLOCK_MONOTONIC: a change of the wall
/// clock (NTP, the user) neither cuts them short nor stretches them.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is reached only inside withLock, under the mutex, which with the condition
    // is the synchronization itself (made in init, destroyed in deinit, never moved). It cannot be a
    // checked Mutex<Value> wrapper: some values are not Sendable (a device's configuration, an
    // output's state holding encoders and threads), a body may hand what it takes from them to the
    // one thread that uses it next (a capture loop, a pool's borrower), as each user states, and
    // Mutex has no condition to wait on.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
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

    /// Runs `body` on the value, holding the mutex.
    func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// A copy of the value.
    var current: Value { withLock { $0 } }

    /// Holding the mutex, waits for a signal or broadcast while `blocked`
    /// says so of the value (until `deadline`, CLOCK_MONOTONIC nanoseconds as
    /// `MonotonicClock.nowNanoseconds()`, if given), then runs `body` on it;
    /// `timedOut` tells whether the deadline ended the wait. The value is
    /// looked at only between waits, never held across one, since other
    /// threads change it while this one waits.
    func withLock<T>(waitingWhile blocked: (Value) -> Bool, untilMonotonicNanoseconds deadline: Int64? = nil,
                     _ body: (inout Value, _ timedOut: Bool) -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var timedOut = false
        while blocked(value) {
            if let deadline {
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                if pthread_cond_timedwait(condition, mutex, &time) == ETIMEDOUT {
                    timedOut = true
                    break
                }
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
        return body(&value, timedOut)
    }

    /// Wakes one waiter.
    func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter.
    func broadcast() { pthread_cond_broadcast(condition) }
}
