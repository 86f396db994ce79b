import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// A V4L2 node opened for streaming, directly or through libv4l2. Every
/// ioctl goes through `request(_:_:_:)`, which retries EINTR and names the
/// request in its error.
final class V4L2StreamingNode: @unchecked Sendable {
    // @unchecked: `isOpen` changes only in close(), called by the owning source under its state lock; `fd` is immutable.
    let path: String
    let fd: Int32
    let throughLibv4l2: Bool
    private var isOpen = true

    private init(path: String, fd: Int32, throughLibv4l2: Bool) {
        self.path = path
        self.fd = fd
        self.throughLibv4l2 = throughLibv4l2
    }

    /// Opens `path` read-write and non-blocking (DQBUF must never wait:
    /// the capture loop waits in poll(), where it also sees the stop signal).
    static func open(_ path: String, throughLibv4l2: Bool) throws(SystemCallError) -> V4L2StreamingNode {
        let flags = O_RDWR | O_NONBLOCK | O_CLOEXEC
        if throughLibv4l2 {
            let fd = try systemCall("v4l2_open(\(path))") { cv4l2_libv4l2_open(path, flags) }
            return V4L2StreamingNode(path: path, fd: fd, throughLibv4l2: true)
        }
        let fd = try systemCall("open(\(path))") { Glibc.open(path, flags) }
        return V4L2StreamingNode(path: path, fd: fd, throughLibv4l2: false)
    }

    deinit { close() }

    /// Issues one ioctl, retrying EINTR.
    func request<T>(_ name: String, _ number: UInt, _ argument: inout T) throws(SystemCallError) {
        let libv4l2 = throughLibv4l2
        let fd = self.fd
        _ = try withUnsafeMutablePointer(to: &argument) { (pointer: UnsafeMutablePointer<T>) throws(SystemCallError) in
            try systemCall("ioctl(\(name))") {
                libv4l2 ? cv4l2_libv4l2_ioctl(fd, number, pointer) : cv4l2_ioctl(fd, number, pointer)
            }
        }
    }

    /// Maps a buffer the driver allocated (its QUERYBUF offset and length).
    func map(length: Int, offset: UInt32) throws(SystemCallError) -> UnsafeMutableRawPointer {
        let address = throughLibv4l2
            ? v4l2_mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, Int64(offset))
            : mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
        guard let address, address != MAP_FAILED else {
            throw SystemCallError(call: throughLibv4l2 ? "v4l2_mmap" : "mmap", errno: errno)
        }
        return address
    }

    func unmap(_ address: UnsafeMutableRawPointer, length: Int) {
        if throughLibv4l2 { _ = v4l2_munmap(address, length) } else { _ = munmap(address, length) }
    }

    /// Closes the descriptor; later calls do nothing.
    func close() {
        guard isOpen else { return }
        isOpen = false
        if throughLibv4l2 { _ = v4l2_close(fd) } else { _ = Glibc.close(fd) }
    }
}

/// A dequeued capture buffer: what VIDIOC_DQBUF said about it.
struct V4L2DequeuedBuffer: Sendable {
    var index: Int
    var bytesUsed: Int
    var flags: UInt32
    var sequence: UInt32
    /// The driver's stamp in nanoseconds.
    var timestamp: Int64
}

/// The driver's capture buffers, mapped into this process, and their state:
/// queued in the driver, lent out as sample storage, or idle. Lent buffers go
/// back into the driver's queue (VIDIOC_QBUF) when their storage is released,
/// from whichever thread releases it; a lock orders that against DQBUF,
/// STREAMOFF and close, so no buffer is queued after streaming stopped.
///
/// The mappings live as long as this object, which every lent storage keeps
/// alive: a frame held after the source closed still reads valid memory.
final class V4L2BufferQueue: @unchecked Sendable {
    // @unchecked: the queue state is guarded by its lock (`state`); the mappings are immutable after init.
    private struct Mapping {
        var address: UnsafeMutableRawPointer
        var length: Int
    }

    private struct State {
        var queued = Set<Int>()
        var lent = Set<Int>()
        var streaming = false
        var closed = false
        /// Why the last buffer could not be queued again, if it could not.
        var requeueFailure: SystemCallError?
    }

    let node: V4L2StreamingNode
    private let mappings: [Mapping]
    private let state = Locked(State())
    static let bufferType = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    static let memory = V4L2_MEMORY_MMAP.rawValue

    /// VIDIOC_REQBUFS for `count` buffers, then QUERYBUF and mmap of each.
    init(node: V4L2StreamingNode, count: UInt32) throws(SystemCallError) {
        self.node = node
        var request = v4l2_requestbuffers()
        request.count = count
        request.type = Self.bufferType
        request.memory = Self.memory
        try node.request("VIDIOC_REQBUFS", cv4l2_VIDIOC_REQBUFS, &request)
        guard request.count > 0 else { throw SystemCallError(call: "ioctl(VIDIOC_REQBUFS)", errno: ENOMEM) }
        var mappings: [Mapping] = []
        do {
            for index in 0..<request.count {
                var buffer = v4l2_buffer()
                buffer.index = index
                buffer.type = Self.bufferType
                buffer.memory = Self.memory
                try node.request("VIDIOC_QUERYBUF", cv4l2_VIDIOC_QUERYBUF, &buffer)
                let length = Int(buffer.length)
                mappings.append(Mapping(address: try node.map(length: length, offset: buffer.m.offset), length: length))
            }
        } catch {
            for mapping in mappings { node.unmap(mapping.address, length: mapping.length) }
            throw error
        }
        self.mappings = mappings
    }

    deinit {
        for mapping in mappings { node.unmap(mapping.address, length: mapping.length) }
        node.close()
    }

    var count: Int { mappings.count }

    /// Buffers in the driver's queue now; with none, there is nothing to poll for.
    var queuedCount: Int { state.withLock { $0.queued.count } }

    /// Why a released buffer could not be queued again (a device gone
    /// answers ENODEV); nil while they all went back.
    var requeueFailure: SystemCallError? { state.withLock { $0.requeueFailure } }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Queues every buffer not lent out, then VIDIOC_STREAMON.
    func start() throws(SystemCallError) {
        try state.withLock { (state: inout State) throws(SystemCallError) in
            guard !state.closed else { throw SystemCallError(call: "ioctl(VIDIOC_STREAMON)", errno: EBADF) }
            for index in 0..<mappings.count where !state.lent.contains(index) && !state.queued.contains(index) {
                try queue(index)
                state.queued.insert(index)
            }
            var type = Int32(Self.bufferType)
            try node.request("VIDIOC_STREAMON", cv4l2_VIDIOC_STREAMON, &type)
            state.streaming = true
        }
    }

    /// VIDIOC_STREAMOFF: the driver gives every queued buffer back.
    func stop() {
        state.withLock { state in
            guard state.streaming, !state.closed else { return }
            state.streaming = false
            var type = Int32(Self.bufferType)
            try? node.request("VIDIOC_STREAMOFF", cv4l2_VIDIOC_STREAMOFF, &type)
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
            var buffer = v4l2_buffer()
            buffer.type = Self.bufferType
            buffer.memory = Self.memory
            do throws(SystemCallError) {
                try node.request("VIDIOC_DQBUF", cv4l2_VIDIOC_DQBUF, &buffer)
            } catch where error.errno == EAGAIN {
                return nil
            }
            let index = Int(buffer.index)
            state.queued.remove(index)
            let stamp = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1_000
            return V4L2DequeuedBuffer(index: index, bytesUsed: min(Int(buffer.bytesused), mappings[index].length),
                                      flags: buffer.flags, sequence: buffer.sequence, timestamp: stamp)
        }
    }

    /// Storage over a dequeued buffer's bytes that queues the buffer again
    /// when released.
    func lend(_ buffer: V4L2DequeuedBuffer) -> SampleStorage {
        state.withLock { _ = $0.lent.insert(buffer.index) }
        let bytes = UnsafeRawBufferPointer(start: mappings[buffer.index].address, count: buffer.bytesUsed)
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
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = Self.bufferType
        buffer.memory = Self.memory
        try node.request("VIDIOC_QBUF", cv4l2_VIDIOC_QBUF, &buffer)
    }
}
