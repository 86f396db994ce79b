#if canImport(Glibc)
import Glibc
#endif

/// The driver's capture buffers, mapped into this process, and their state:
/// queued in the driver, lent out as sample storage, or idle. Lent buffers go
/// back into the driver's queue (VIDIOC_QBUF) when their storage is released,
/// from whichever thread releases it; a lock orders that against DQBUF,
/// STREAMOFF and close, so no buffer is queued after streaming stopped.
///
/// The mappings live as long as this object, which every lent storage keeps
/// alive: a frame held after the source closed still reads valid memory.
final class V4L2BufferQueue: Sendable {
    private struct State {
        /// Each buffer's mapping, fixed from init to deinit. A buffer's bytes
        /// are read only while it is out of the driver's queue (lent or
        /// being copied), as `queued` and `lent` say.
        let mappings: [UnsafeMutableRawBufferPointer]
        var queued = Set<Int>()
        var lent = Set<Int>()
        var streaming = false
        /// CLOCK_MONOTONIC just before the last VIDIOC_STREAMON.
        var streamingSince: Int64?
        var closed = false
        /// Why the last buffer could not be queued again, if it could not.
        var requeueFailure: SystemCallError?
    }

    let node: any V4L2StreamingNode
    /// How many buffers are mapped.
    let count: Int
    private let state: Locked<State>

    /// VIDIOC_REQBUFS for `count` buffers, then QUERYBUF and mmap of each.
    init(node: any V4L2StreamingNode, count: UInt32) throws(SystemCallError) {
        self.node = node
        let allocated = try node.requestBuffers(count: count)
        guard allocated > 0 else { throw SystemCallError(call: "ioctl(VIDIOC_REQBUFS)", errno: ENOMEM) }
        var mappings: [UnsafeMutableRawBufferPointer] = []
        do {
            for index in 0..<allocated {
                mappings.append(try node.mapBuffer(try node.queryBuffer(index: index)))
            }
        } catch {
            for mapping in mappings { node.unmapBuffer(mapping) }
            throw error
        }
        self.count = mappings.count
        state = Locked(State(mappings: mappings))
    }

    deinit {
        for mapping in state.withLock({ $0.mappings }) { node.unmapBuffer(mapping) }
        node.close()
    }

    /// Buffers in the driver's queue now; with none, there is nothing to poll for.
    var queuedCount: Int { state.withLock { $0.queued.count } }

    /// Why a released buffer could not be queued again (a device gone
    /// answers ENODEV); nil while they all went back.
    var requeueFailure: SystemCallError? { state.withLock { $0.requeueFailure } }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether VIDIOC_STREAMON has been made and no STREAMOFF since.
    var isStreaming: Bool { state.withLock { $0.streaming } }

    /// CLOCK_MONOTONIC nanoseconds taken just before the last VIDIOC_STREAMON:
    /// no buffer filled after it can carry an earlier capture time (beyond the
    /// frame being exposed when it came), so an earlier stamp is a leftover.
    var streamingSince: Int64? { state.withLock { $0.streamingSince } }

    /// Queues every buffer not lent out, then VIDIOC_STREAMON.
    func start() throws(SystemCallError) {
        try state.withLock { (state: inout State) throws(SystemCallError) in
            guard !state.closed else { throw SystemCallError(call: "ioctl(VIDIOC_STREAMON)", errno: EBADF) }
            for index in 0..<count where !state.lent.contains(index) && !state.queued.contains(index) {
                try queue(index)
                state.queued.insert(index)
            }
            let since = MonotonicClock.nowNanoseconds()
            try node.streamOn()
            state.streaming = true
            state.streamingSince = since
        }
    }

    /// VIDIOC_STREAMOFF: the driver gives every queued buffer back.
    func stop() {
        state.withLock { state in
            guard state.streaming, !state.closed else { return }
            state.streaming = false
            try? node.streamOff()
            state.queued.removeAll()
        }
    }

    /// Stops streaming and closes the node. A node opened through libv4l2
    /// stays open until the last lent buffer is released, because closing it
    /// frees the memory libv4l2 converts into.
    func close() {
        stop()
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            if !node.throughLibv4l2 { node.close() }
        }
    }

    /// VIDIOC_DQBUF; nil when no buffer is ready (EAGAIN).
    func dequeue() throws(SystemCallError) -> V4L2DequeuedBuffer? {
        try state.withLock { (state: inout State) throws(SystemCallError) -> V4L2DequeuedBuffer? in
            guard !state.closed else { throw SystemCallError(call: "ioctl(VIDIOC_DQBUF)", errno: EBADF) }
            var buffer: V4L2DequeuedBuffer
            do throws(SystemCallError) {
                buffer = try node.dequeueBuffer()
            } catch where error.errno == EAGAIN {
                // Woken with nothing filled (another reader, or a spurious wakeup): not an error.
                return nil
            }
            // An index the driver never gave would be a driver bug; it must not reach memory.
            guard state.mappings.indices.contains(buffer.index) else {
                throw SystemCallError(call: "ioctl(VIDIOC_DQBUF)", errno: EINVAL)
            }
            // One we did not queue is not ours to read or to queue again.
            guard state.queued.remove(buffer.index) != nil else {
                buffer.wasNotQueued = true
                return buffer
            }
            buffer.bytesUsed = max(0, min(buffer.bytesUsed, state.mappings[buffer.index].count))
            return buffer
        }
    }

    /// The bytes of a dequeued buffer as sample storage: a copy, with the
    /// buffer queued again at once, when `copying` or when only a few
    /// buffers are left in the driver's queue (so that frames held by slow
    /// outputs never starve the driver, and a driver that refills buffers
    /// in turn never writes into one an output still reads); otherwise the
    /// buffer itself, lent until the storage is released.
    func take(_ buffer: V4L2DequeuedBuffer, copying: Bool) -> SampleStorage {
        let (low, mapping) = state.withLock { ($0.queued.count <= max(count / 8, 1), $0.mappings[buffer.index]) }
        guard copying || low else { return lend(buffer) }
        let storage = SampleStorage(copying: UnsafeRawBufferPointer(rebasing: mapping.prefix(buffer.bytesUsed)))
        giveBack(buffer.index)
        return storage
    }

    /// Storage over a dequeued buffer's bytes that queues the buffer again
    /// when released.
    func lend(_ buffer: V4L2DequeuedBuffer) -> SampleStorage {
        let mapping = state.withLock { state in
            state.lent.insert(buffer.index)
            return state.mappings[buffer.index]
        }
        let bytes = UnsafeRawBufferPointer(rebasing: mapping.prefix(buffer.bytesUsed))
        // The closure holds the queue, and with it the mapping, until the
        // storage goes.
        return SampleStorage(lending: bytes) { self.giveBack(buffer.index) }
    }

    /// Puts a buffer back into the driver's queue if still streaming;
    /// otherwise it waits, idle, for the next `start()`.
    func giveBack(_ index: Int) {
        state.withLock { state in
            state.lent.remove(index)
            guard state.streaming, !state.closed, !state.queued.contains(index) else { return }
            // A failed QBUF (device gone) leaves the buffer idle; the
            // capture loop learns of the failure from DQBUF or poll(), or,
            // once no buffer is left queued, from `requeueFailure`.
            do throws(SystemCallError) {
                try queue(index)
                state.queued.insert(index)
            } catch {
                state.requeueFailure = error
            }
        }
    }

    private func queue(_ index: Int) throws(SystemCallError) {
        try node.queueBuffer(index: UInt32(index))
    }
}
