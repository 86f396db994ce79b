#if canImport(Glibc)
import Glibc
#endif

/// Equal-sized byte buffers that a virtual source fills and lends to its
/// samples. A buffer comes back to the pool when the last sample holding it
/// goes, on whatever thread that happens, so a source in steady state
/// allocates no sample memory: the pool grows to at most `maximumCount`
/// buffers, as many as its consumer holds at once.
final class RecyclingBufferPool: @unchecked Sendable {
    // @unchecked: `free`, `all` and `waiting` are guarded by `lock`; each lent buffer is owned by one storage.
    let bufferSize: Int
    let maximumCount: Int
    private let lock = Lock()
    private var free: [UnsafeMutableRawBufferPointer] = []
    private var all: [UnsafeMutableRawBufferPointer] = []
    /// Readable after a buffer came back while the loop waited for one in poll().
    private let returned = WakeupPipe()
    /// Whether a loop waits for a buffer: only then does a return wake it,
    /// so a source that never runs short makes no system call per frame.
    private var waiting = false

    init(bufferSize: Int, maximumCount: Int) {
        self.bufferSize = bufferSize
        self.maximumCount = max(maximumCount, 1)
        free.reserveCapacity(self.maximumCount)
        all.reserveCapacity(self.maximumCount)
    }

    deinit {
        for buffer in all { buffer.deallocate() }
        returned.close()
    }

    /// How many buffers the pool has made so far.
    var allocatedCount: Int { lock.withLock { all.count } }

    /// A free buffer, or a new one while there are fewer than the maximum; nil when all are lent.
    func take() -> UnsafeMutableRawBufferPointer? {
        lock.withLock {
            if let buffer = free.popLast() { return buffer }
            guard all.count < maximumCount else { return nil }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bufferSize, 1), alignment: 64)
            all.append(buffer)
            return buffer
        }
    }

    /// Waits in poll() until a buffer is free; nil once `stop` is raised.
    func waitForBuffer(stop: CaptureStopSignal) -> UnsafeMutableRawBufferPointer? {
        while !stop.isRaised {
            if let buffer = take() { return buffer }
            // Checked again under the lock: a buffer returned since take()
            // would otherwise not wake the poll below.
            let gotOne = lock.withLock { () -> Bool in
                waiting = free.isEmpty
                return !free.isEmpty
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
        let wake = lock.withLock { () -> Bool in
            free.append(buffer)
            defer { waiting = false }
            return waiting
        }
        if wake { returned.wake() }
    }
}
