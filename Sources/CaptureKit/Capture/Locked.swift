import Synchronization

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
        try lock.withLock { () throws(E) -> T in try body(&value) }
    }

    /// A copy of the value.
    var current: Value { withLock { $0 } }
}
