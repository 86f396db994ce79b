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
final class BoundedQueue<Element>: @unchecked Sendable {
    // @unchecked: every stored property but `capacity` and `lock` is read and written under `lock`.
    let capacity: Int
    private var items: [Element?]
    private var head = 0
    private var count = 0
    private var closed = false
    /// Set by `wake()`: until the queue is next found empty, `take` does not wait.
    private var woken = false
    private(set) var refused = 0
    /// Guards the state; its condition wakes the taker.
    private let lock = ConditionLock()

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        items = Array(repeating: nil, count: capacity)
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.withLock(body)
    }

    /// Adds `item` unless the queue is full or closed; returns whether it
    /// was added. A waiting taker is woken once `wakingAt` items are queued
    /// (1: at once).
    @discardableResult
    func put(_ item: Element, wakingAt threshold: Int = 1) -> Bool {
        locked {
            guard !closed else { return false }
            guard count < capacity else {
                refused += 1
                return false
            }
            items[(head + count) % capacity] = item
            count += 1
            if count >= threshold { lock.signal() }
            return true
        }
    }

    /// Wakes the taker: it takes what gathered without waiting, then one
    /// `take` returns nil at once, so that it can look at other news.
    func wake() {
        locked {
            woken = true
            lock.signal()
        }
    }

    /// Takes the oldest item, waiting up to `timeoutNanoseconds` (nil: for
    /// ever). Returns nil on timeout, or once the queue is closed and empty.
    func take(timeoutNanoseconds: Int64? = nil) -> Element? {
        locked {
            // A monotonic deadline: the wall clock may be set meanwhile.
            let deadline = timeoutNanoseconds.map { timeout in
                let now = MonotonicClock.nowNanoseconds()
                return timeout > Int64.max - now ? Int64.max : now + max(0, timeout)
            }
            while count == 0 && !closed && !woken {
                if let deadline {
                    if !lock.wait(untilMonotonicNanoseconds: deadline) { break }
                } else {
                    lock.wait()
                }
            }
            guard count > 0 else {
                woken = false
                return nil
            }
            let item = items[head]
            items[head] = nil
            head = (head + 1) % capacity
            count -= 1
            return item
        }
    }

    /// No more items will be put; takers drain what is left, then get nil.
    func close() {
        locked {
            closed = true
            lock.broadcast()
        }
    }

    var isEmpty: Bool { locked { count == 0 } }
    /// Items waiting now.
    var queuedCount: Int { locked { count } }
    /// `read` of the item that has waited longest, if any (it stays queued).
    func oldest<T>(_ read: (Element) -> T) -> T? { locked { count == 0 ? nil : items[head].map(read) } }
    var isClosed: Bool { locked { closed } }
    var refusedCount: Int { locked { refused } }
}
