#if canImport(Glibc)
import Glibc
#endif

/// Equal-sized byte buffers that a virtual source fills and lends to its
/// samples. A buffer comes back to the pool when the last sample holding it
/// goes, on whatever thread that happens, so a source in steady state
/// allocates no sample memory: the pool grows to at most `maximumCount`
/// buffers, as many as its consumer holds at once.
final class RecyclingBufferPool: @unchecked Sendable {
    let bufferSize: Int
    let maximumCount: Int
    private let lock = WriterLock()
    private var free: [UnsafeMutableRawBufferPointer] = []
    private var all: [UnsafeMutableRawBufferPointer] = []
    /// A pipe, readable after a buffer came back: a loop out of buffers waits on it in poll().
    private let returned: Int32
    private let returnedWriteEnd: Int32

    init(bufferSize: Int, maximumCount: Int) {
        self.bufferSize = bufferSize
        self.maximumCount = max(maximumCount, 1)
        free.reserveCapacity(self.maximumCount)
        all.reserveCapacity(self.maximumCount)
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
        }
        returned = ends[0]
        returnedWriteEnd = ends[1]
    }

    deinit {
        for buffer in all { buffer.deallocate() }
        if returned >= 0 { Glibc.close(returned) }
        if returnedWriteEnd >= 0 { Glibc.close(returnedWriteEnd) }
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
            var entries = (pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: returned, events: Int16(POLLIN), revents: 0))
            _ = withUnsafeMutableBytes(of: &entries) { Glibc.poll($0.baseAddress!.assumingMemoryBound(to: pollfd.self), 2, -1) }
            var drained = [UInt8](repeating: 0, count: 64)
            _ = Glibc.read(returned, &drained, drained.count)
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
        lock.withLock { free.append(buffer) }
        var one: UInt8 = 1
        _ = Glibc.write(returnedWriteEnd, &one, 1)
    }
}
