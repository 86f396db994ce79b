#if canImport(Glibc)
import Glibc
#endif

/// State that threads wait on (a queue's items, a call under way), with
/// the pthread mutex that guards it and one condition variable. Mutex and
/// condition live on the heap, since they must not move, from init to
/// deinit. Timed waits run on CLOCK_MONOTONIC: a change of the wall clock
/// (NTP, the user) neither cuts them short nor stretches them.
final class ConditionLock<State>: @unchecked Sendable {
    // @unchecked: the mutex and condition are the synchronization itself
    // (made in init, destroyed in deinit, never moved), and `state` is
    // reached only inside withLock, under the mutex.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var state: State

    init(_ state: State) {
        self.state = state
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

    /// Runs `body` on the state, holding the mutex.
    func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Holding the mutex, waits for a signal or broadcast while `blocked`
    /// says so of the state (until `deadline`, CLOCK_MONOTONIC nanoseconds as
    /// `MonotonicClock.nowNanoseconds()`, if given), then runs `body` on it;
    /// `timedOut` tells whether the deadline ended the wait. The state is
    /// looked at only between waits, never held across one, since other
    /// threads change it while this one waits.
    func withLock<T>(waitingWhile blocked: (State) -> Bool, untilMonotonicNanoseconds deadline: Int64? = nil,
                     _ body: (inout State, _ timedOut: Bool) -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var timedOut = false
        while blocked(state) {
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
        return body(&state, timedOut)
    }

    /// Wakes one waiter.
    func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter.
    func broadcast() { pthread_cond_broadcast(condition) }
}
