#if canImport(Glibc)
import Glibc
#endif

/// Equal-sized byte buffers that a virtual source fills and lends to its
/// samples. A buffer comes back to the pool when the last sample holding it
/// goes, on whatever thread that happens, so a source in steady state
/// allocates no sample memory: the pool grows to at most `maximumCount`
/// buffers, as many as its consumer holds at once.
final class RecyclingBufferPool: Sendable {
    /// The pool's bookkeeping. A buffer taken from `free` is owned by its
    /// taker (the source's loop, then the one storage lent it) until it is
    /// recycled into `free` again.
    private struct State {
        var free: [UnsafeMutableRawBufferPointer] = []
        var all: [UnsafeMutableRawBufferPointer] = []
        /// Whether a loop waits for a buffer: only then does a return wake it,
        /// so a source that never runs short makes no system call per frame.
        var waiting = false
    }

    let bufferSize: Int
    let maximumCount: Int
    private let state: Locked<State>
    /// Readable after a buffer came back while the loop waited for one in poll().
    private let returned = WakeupPipe()

    init(bufferSize: Int, maximumCount: Int) {
        self.bufferSize = bufferSize
        self.maximumCount = max(maximumCount, 1)
        var initial = State()
        initial.free.reserveCapacity(self.maximumCount)
        initial.all.reserveCapacity(self.maximumCount)
        state = Locked(initial)
    }

    deinit {
        for buffer in state.withLock({ $0.all }) { buffer.deallocate() }
        returned.close()
    }

    /// How many buffers the pool has made so far.
    var allocatedCount: Int { state.withLock { $0.all.count } }

    /// A free buffer, or a new one while there are fewer than the maximum; nil when all are lent.
    func take() -> UnsafeMutableRawBufferPointer? {
        state.withLock { state in
            if let buffer = state.free.popLast() { return buffer }
            guard state.all.count < maximumCount else { return nil }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bufferSize, 1), alignment: 64)
            state.all.append(buffer)
            return buffer
        }
    }

    /// Waits in poll() until a buffer is free; nil once `stop` is raised.
    func waitForBuffer(stop: CaptureStopSignal) -> UnsafeMutableRawBufferPointer? {
        while !stop.isRaised {
            if let buffer = take() { return buffer }
            // Checked again under the lock: a buffer returned since take()
            // would otherwise not wake the poll below.
            let gotOne = state.withLock { state -> Bool in
                state.waiting = state.free.isEmpty
                return !state.free.isEmpty
            }
            if gotOne { continue }
            stop.waitUntilRaised(orReadable: returned.readEnd)
            returned.drain()
        }
        return nil
    }

    /// Storage for the first `count` bytes of `buffer` that returns it to the pool when it goes.
    func lend(_ buffer: UnsafeMutableRawBufferPointer, count: Int) -> SampleStorage {
        SampleStorage(lending: UnsafeRawBufferPointer(start: buffer.baseAddress, count: min(count, buffer.count))) { [self] in
            recycle(buffer)
        }
    }

    /// Returns a buffer taken but not lent.
    func recycle(_ buffer: UnsafeMutableRawBufferPointer) {
        let wake = state.withLock { state -> Bool in
            state.free.append(buffer)
            defer { state.waiting = false }
            return state.waiting
        }
        if wake { returned.wake() }
    }
}
