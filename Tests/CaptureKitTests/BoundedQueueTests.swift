import Foundation
import Testing
@testable import CaptureKit

/// The queue between a capture thread and an output's thread: bounded,
/// first in first out, and waking its taker per item or per run of items.
@Suite struct BoundedQueueTests {
    /// Runs `take` on a thread of its own; `result` is set once it returns.
    final class Taker: @unchecked Sendable {
        private let lock = NSLock()
        private var taken: Int??
        private let done = DispatchSemaphore(value: 0)

        init(_ queue: BoundedQueue<Int>, timeoutNanoseconds: Int64) {
            Thread.detachNewThread { [self] in
                let item = queue.take(timeoutNanoseconds: timeoutNanoseconds)
                lock.lock(); taken = .some(item); lock.unlock()
                done.signal()
            }
        }

        /// nil while `take` has not returned; then what it returned.
        var result: Int?? { lock.lock(); defer { lock.unlock() }; return taken }

        /// Waits up to `seconds` for `take` to return.
        func wait(seconds: Double) -> Int?? {
            _ = done.wait(timeout: .now() + seconds)
            return result
        }
    }

    @Test func itemsComeOutInOrderAndAFullQueueRefusesAndCounts() {
        let queue = BoundedQueue<Int>(capacity: 2)
        #expect(queue.put(1))
        #expect(queue.put(2))
        #expect(!queue.put(3))
        #expect(queue.refusedCount == 1)
        #expect(queue.take(timeoutNanoseconds: 0) == 1)
        #expect(queue.put(4))
        #expect(queue.take(timeoutNanoseconds: 0) == 2)
        #expect(queue.take(timeoutNanoseconds: 0) == 4)
        #expect(queue.take(timeoutNanoseconds: 0) == nil)
        queue.close()
        #expect(!queue.put(5))
        #expect(queue.refusedCount == 1, "a closed queue refuses without counting a drop")
    }

    /// A taker waiting on an empty queue sleeps while items gather below the
    /// threshold, and is woken by the item that reaches it.
    @Test func aWaitingTakerIsWokenOnceEnoughItemsGathered() {
        let queue = BoundedQueue<Int>(capacity: 16)
        let taker = Taker(queue, timeoutNanoseconds: 10_000_000_000)
        usleep(100_000)
        queue.put(1, wakingAt: 3)
        queue.put(2, wakingAt: 3)
        usleep(300_000)
        #expect(taker.result == nil, "woken before three items were queued")
        queue.put(3, wakingAt: 3)
        #expect(taker.wait(seconds: 5) == .some(1))
        #expect(queue.take(timeoutNanoseconds: 0) == 2)
        #expect(queue.take(timeoutNanoseconds: 0) == 3)
    }

    /// Items put one by one (the default) wake the taker each time.
    @Test func eachItemWakesTheTakerByDefault() {
        let queue = BoundedQueue<Int>(capacity: 16)
        let taker = Taker(queue, timeoutNanoseconds: 10_000_000_000)
        usleep(100_000)
        queue.put(7)
        #expect(taker.wait(seconds: 5) == .some(7))
    }

    /// `wake()` hands over what gathered without waiting, then makes one
    /// `take` return nil at once; the take after that waits again.
    @Test func wakeHandsOverWhatGatheredThenReturnsNilOnce() {
        let queue = BoundedQueue<Int>(capacity: 16)
        queue.put(1, wakingAt: 8)
        queue.put(2, wakingAt: 8)
        queue.wake()
        #expect(queue.take(timeoutNanoseconds: 5_000_000_000) == 1)
        #expect(queue.take(timeoutNanoseconds: 5_000_000_000) == 2)
        let start = Date()
        #expect(queue.take(timeoutNanoseconds: 5_000_000_000) == nil)
        #expect(Date().timeIntervalSince(start) < 2, "the woken take waited for its timeout")
        let again = Date()
        #expect(queue.take(timeoutNanoseconds: 200_000_000) == nil)
        #expect(Date().timeIntervalSince(again) >= 0.15, "the take after the woken one did not wait")
    }

    /// A taker waiting on an empty queue returns nil as soon as it is woken.
    @Test func wakeEndsAWaitOnAnEmptyQueue() {
        let queue = BoundedQueue<Int>(capacity: 4)
        let taker = Taker(queue, timeoutNanoseconds: 10_000_000_000)
        usleep(100_000)
        queue.wake()
        #expect(taker.wait(seconds: 5) == .some(nil))
    }

    /// A timed take on an empty queue waits its timeout, measured on the
    /// monotonic clock its deadline is set on, and not much longer.
    @Test func aTimedTakeOnAnEmptyQueueReturnsNilAfterAboutItsTimeout() {
        let queue = BoundedQueue<Int>(capacity: 2)
        let start = MonotonicClock.nowNanoseconds()
        #expect(queue.take(timeoutNanoseconds: 300_000_000) == nil)
        let waited = MonotonicClock.nowNanoseconds() - start
        #expect(waited >= 300_000_000, "returned before its timeout: \(waited) ns")
        #expect(waited < 2_000_000_000, "waited far beyond its timeout: \(waited) ns")
    }

    /// A deadline already past ends a timed wait at once, answering that it passed.
    @Test func aConditionWaitWithAPastDeadlineReturnsAtOnce() {
        let lock = Locked(())
        let start = MonotonicClock.nowNanoseconds()
        let timedOut = lock.withLock(waitingWhile: { _ in true }, untilMonotonicNanoseconds: start - 1_000_000) { _, timedOut in timedOut }
        #expect(timedOut)
        #expect(MonotonicClock.nowNanoseconds() - start < 1_000_000_000)
    }
}
