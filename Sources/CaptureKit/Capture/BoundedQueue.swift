#if canImport(Glibc)
import Glibc
#endif

/// A first-in, first-out queue of fixed capacity between a capture thread
/// and an output's thread. Putting never blocks: when the queue is full the
/// new item is refused and counted, so a slow encoder costs dropped samples,
/// never a stalled capture loop. Taking blocks until an item arrives or the
/// queue is closed.
///
/// A producer that delivers in bursts may let items gather before the
/// taker is woken (`put(_:wakingAt:)`); `wake()` wakes it regardless.
final class BoundedQueue<Element>: Sendable {
    let capacity: Int
    /// The ring of items and what takers look at; its condition wakes the taker.
    private struct Ring {
        var items: [Element?]
        var head = 0
        var count = 0
        var closed = false
        /// Set by `wake()`: until the queue is next found empty, `take` does not wait.
        var woken = false
        var refused = 0
    }
    private let lock: Locked<Ring>

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        lock = Locked(Ring(items: Array(repeating: nil, count: capacity)))
    }

    /// Adds `item` unless the queue is full or closed; returns whether it
    /// was added. A waiting taker is woken once `wakingAt` items are queued
    /// (1: at once).
    @discardableResult
    func put(_ item: Element, wakingAt threshold: Int = 1) -> Bool {
        lock.withLock { ring in
            guard !ring.closed else { return false }
            guard ring.count < capacity else {
                ring.refused += 1
                return false
            }
            ring.items[(ring.head + ring.count) % capacity] = item
            ring.count += 1
            if ring.count >= threshold { lock.signal() }
            return true
        }
    }

    /// Wakes the taker: it takes what gathered without waiting, then one
    /// `take` returns nil at once, so that it can look at other news.
    func wake() {
        lock.withLock { ring in
            ring.woken = true
            lock.signal()
        }
    }

    /// Takes the oldest item, waiting up to `timeoutNanoseconds` (nil: for
    /// ever). Returns nil on timeout, or once the queue is closed and empty.
    func take(timeoutNanoseconds: Int64? = nil) -> Element? {
        // A monotonic deadline: the wall clock may be set meanwhile.
        let deadline = timeoutNanoseconds.map { timeout in
            let now = MonotonicClock.nowNanoseconds()
            return timeout > Int64.max - now ? Int64.max : now + max(0, timeout)
        }
        return lock.withLock(waitingWhile: { $0.count == 0 && !$0.closed && !$0.woken }, untilMonotonicNanoseconds: deadline) { ring, _ in
            guard ring.count > 0 else {
                ring.woken = false
                return nil
            }
            let item = ring.items[ring.head]
            ring.items[ring.head] = nil
            ring.head = (ring.head + 1) % capacity
            ring.count -= 1
            return item
        }
    }

    /// No more items will be put; takers drain what is left, then get nil.
    func close() {
        lock.withLock { ring in
            ring.closed = true
            lock.broadcast()
        }
    }

    var isEmpty: Bool { lock.withLock { $0.count == 0 } }
    /// Items waiting now.
    var queuedCount: Int { lock.withLock { $0.count } }
    /// `read` of the item that has waited longest, if any (it stays queued).
    func oldest<T>(_ read: (Element) -> T) -> T? { lock.withLock { $0.count == 0 ? nil : $0.items[$0.head].map(read) } }
    var isClosed: Bool { lock.withLock { $0.closed } }
    var refusedCount: Int { lock.withLock { $0.refused } }
}
