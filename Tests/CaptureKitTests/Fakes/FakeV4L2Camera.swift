import Glibc
@testable import CaptureKit

/// A V4L2 camera whose driver a test plays: it answers the probing requests
/// for one format, and it streams. Buffers queued to it are filled from a
/// script, in order, one frame per buffer, and a pipe becomes readable
/// whenever a filled buffer waits, so the capture loop's poll() sees it as
/// it sees a kernel node. Errors are the kernel's: DQBUF with nothing
/// filled answers EAGAIN, a scripted disconnect ENODEV.
///
/// Every node opened on it (`FakeV4L2.cameras`) is a `FakeV4L2CameraHandle`;
/// the camera keeps what the driver would: the buffers, the queue, the
/// requests made, in `requests`.
final class FakeV4L2Camera: @unchecked Sendable {
    // @unchecked: the driver's state is behind `lock`; the configuration is set before the camera is first opened.

    /// One buffer's worth of what the driver captured.
    struct Frame: Sendable {
        var bytes: [UInt8]
        /// `v4l2_buffer.flags` besides the timestamp clock (keyframe, error …).
        var flags: UInt32 = 0
        /// The driver's stamp in nanoseconds; nil stamps it on the camera's clock.
        var timestamp: Int64? = nil
        /// Stamps it this many nanoseconds after the last VIDIOC_STREAMON, on the
        /// camera's clock (negative: before it, as a buffer another reader left).
        var stampedAfterStreamOn: Int64? = nil
        /// BYTESUSED; nil for `bytes.count`.
        var bytesUsed: Int? = nil
    }

    /// What the driver does next. Steps other than `.frame` wait until every
    /// frame filled before them was dequeued, so a script plays the same way
    /// on every run.
    enum Step: Sendable {
        /// Fills the next queued buffer.
        case frame(Frame)
        /// Stops here until `resume()` (at once if it was called already).
        case pause
        /// Skips frames: the sequence numbers (and the clock) move on by this many.
        case drop(Int)
        /// From here DQBUF fails with this errno (ENODEV: the device went away).
        case failDequeue(Int32)
        /// From here QBUF fails with this errno.
        case failQueue(Int32)
        /// Makes poll() readable with nothing to dequeue.
        case spuriousWakeup
        /// The node hangs up (poll answers POLLHUP) and, with `vanish`, its
        /// path goes from the file system, as an unplugged device's does.
        case hangUp(vanish: Bool)
        /// Fills a buffer the reader holds (not queued) and hands it back,
        /// as v4l2loopback's writer does when it comes round to it.
        case refillHeld(Frame)
    }

    let fourcc: FourCC
    let width: UInt32
    let height: UInt32
    /// The time per frame the driver offers and stamps frames by.
    let interval: Fraction
    /// The size of each buffer (the format's largest frame).
    let bufferSize: Int
    var capability = Caps.node(Caps.capture)
    /// The timestamp-clock bits of `v4l2_buffer.flags` (V4L2_BUF_FLAG_TIMESTAMP_*) on every buffer.
    var timestampFlags = V4L2TimestampClock.timestampMonotonic
    /// The clock the driver stamps with, or nil for zero stamps.
    var stampClock: clockid_t? = CLOCK_MONOTONIC
    /// When set, VIDIOC_S_PRIORITY fails with this errno.
    var priorityError: Int32?
    /// When set, VIDIOC_STREAMON fails with this errno (ENOSPC: a USB bus out of bandwidth).
    var streamOnError: Int32?
    /// When set, VIDIOC_S_PARM answers this interval instead of the one asked.
    var intervalReply: Fraction?
    /// When set, VIDIOC_G_FMT answers this instead of the format set.
    var formatReply: V4L2CaptureFormat?
    /// The most buffers REQBUFS allocates.
    var maxBuffers: UInt32 = 32

    fileprivate struct Driver {
        var script: [Step]
        var position = 0
        var paused = false
        /// `resume()` calls not yet used up by a `.pause`.
        var resumes = 0
        var streaming = false
        var buffers: [UnsafeMutableRawBufferPointer] = []
        var mapped = 0
        var queued: [Int] = []
        var filled: [V4L2DequeuedBuffer] = []
        var sequence: UInt32 = 0
        /// Where the stamps start: the camera clock at the first STREAMON; after
        /// a restart, moved on so that the next frame is stamped at the new STREAMON.
        var origin: Int64 = 0
        /// The camera clock at the last STREAMON.
        var streamedOn: Int64 = 0
        var dequeueError: Int32?
        var queueError: Int32?
        var exists = true
        var hungUp = false
        var priority = V4L2Priority.interactive
        var requests: [String] = []
        var openHandles = 0
        var dequeued = 0
        /// A wakeup with nothing filled that DQBUF has not answered yet; the script waits for it.
        var pendingEmptyWakeup = false
        var emptyWakeups = 0
    }

    private let lock = Locked<Driver>(Driver(script: []))
    /// The pipe poll() watches: readable while a filled buffer waits.
    private let readEnd: Int32
    private let writeEnd: Int32
    /// A frame is filled no earlier than this long before its stamp: a script
    /// plays in real time after its first half second, as a camera's frames
    /// come, and no stamp runs ahead of the clock by more than
    /// V4L2TimestampClock finds plausible (1 s).
    static let lead: Int64 = 500_000_000

    init(fourcc: FourCC = FourCC("GREY")!, width: UInt32 = 64, height: UInt32 = 48, interval: Fraction = Fraction(1, 30),
         bufferSize: Int? = nil, script: [Step] = []) throws {
        self.fourcc = fourcc
        self.width = width
        self.height = height
        self.interval = interval
        self.bufferSize = bufferSize ?? Int(width * height)
        (readEnd, writeEnd) = try Posix.nonBlockingPipe()
        lock.withLock { $0.script = script }
    }

    deinit {
        try? Posix.close(readEnd)
        lock.withLock { driver in
            if !driver.hungUp { try? Posix.close(writeEnd) }
            for buffer in driver.buffers { buffer.deallocate() }
        }
    }

    /// `count` frames of `bytesPerFrame` bytes, each filled with its number
    /// (the low byte of its position in the stream) so tests can tell them apart.
    static func numberedFrames(_ count: Int, from first: Int = 0, bytesPerFrame: Int = 64 * 48) -> [Step] {
        (first..<first + count).map { .frame(Frame(bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: $0), count: bytesPerFrame))) }
    }

    // MARK: What a test reads

    /// The requests made so far, by name (`VIDIOC_STREAMON` …), in order.
    var requests: [String] { lock.withLock { $0.requests } }
    /// Buffers mapped and not unmapped yet.
    var mappedBuffers: Int { lock.withLock { $0.mapped } }
    var isStreaming: Bool { lock.withLock { $0.streaming } }
    /// The camera clock (`stampClock`) at the last VIDIOC_STREAMON; 0 before the first.
    var streamedOnTime: Int64 { lock.withLock { $0.streamedOn } }
    var priority: V4L2Priority { lock.withLock { $0.priority } }
    /// Handles opened and not closed yet.
    var openHandles: Int { lock.withLock { $0.openHandles } }
    /// Buffers handed out by DQBUF.
    var dequeuedBuffers: Int { lock.withLock { $0.dequeued } }
    /// DQBUF calls that answered a scripted `.spuriousWakeup` with EAGAIN.
    var emptyWakeups: Int { lock.withLock { $0.emptyWakeups } }
    /// Whether every step of the script has been played.
    var isScriptDone: Bool { lock.withLock { $0.position >= $0.script.count && $0.filled.isEmpty } }

    /// Adds steps to the script and plays on.
    func append(_ steps: [Step]) {
        lock.withLock { driver in
            driver.script += steps
            pump(&driver)
        }
    }

    /// Goes on after a `.pause`, or lets the next `.pause` pass: a test
    /// need not know whether streaming reached it yet.
    func resume() {
        lock.withLock { driver in
            if driver.paused { driver.paused = false } else { driver.resumes += 1 }
            pump(&driver)
        }
    }

    /// Waits (up to `seconds`) until the script has been played to its end.
    func waitUntilScriptDone(seconds: Double = 10) -> Bool {
        let deadline = MonotonicClock.nowNanoseconds() + Int64(seconds * 1e9)
        while !isScriptDone {
            if MonotonicClock.nowNanoseconds() > deadline { return false }
            usleep(2_000)
        }
        return true
    }

    // MARK: The driver

    /// Plays the script as far as it can: frames into queued buffers, other
    /// steps once the frames before them were taken.
    private func pump(_ driver: inout Driver) {
        while driver.streaming, !driver.paused, !driver.pendingEmptyWakeup, driver.position < driver.script.count {
            let step = driver.script[driver.position]
            if case .frame(let frame) = step {
                guard !driver.queued.isEmpty else { return }
                fill(driver.queued.removeFirst(), with: frame, &driver)
                driver.position += 1
                continue
            }
            guard driver.filled.isEmpty else { return }
            driver.position += 1
            switch step {
            case .frame: break
            case .pause:
                if driver.resumes > 0 { driver.resumes -= 1 } else { driver.paused = true }
            case .drop(let count): driver.sequence &+= UInt32(count)
            case .failDequeue(let code):
                driver.dequeueError = code
                wake()
            case .failQueue(let code): driver.queueError = code
            case .spuriousWakeup:
                driver.pendingEmptyWakeup = true
                wake()
            case .refillHeld(let frame):
                let held = driver.buffers.indices.first { index in
                    !driver.queued.contains(index) && !driver.filled.contains { $0.index == index }
                }
                if let held { fill(held, with: frame, &driver) }
            case .hangUp(let vanish):
                if vanish { driver.exists = false }
                if !driver.hungUp {
                    driver.hungUp = true
                    try? Posix.close(writeEnd)
                }
            }
        }
    }

    private func fill(_ index: Int, with frame: Frame, _ driver: inout Driver) {
        let buffer = driver.buffers[index]
        let count = min(frame.bytes.count, buffer.count)
        frame.bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        let stamp: Int64
        if let timestamp = frame.timestamp {
            stamp = timestamp
        } else if let stampClock {
            stamp = frame.stampedAfterStreamOn.map { driver.streamedOn + $0 }
                ?? driver.origin + Int64(driver.sequence) * nanoseconds(interval)
            // Not before its time (less the lead): the capture thread that asked waits, as on a camera.
            let early = stamp - Self.lead - now(stampClock)
            if early > 0 { usleep(useconds_t(early / 1000)) }
        } else {
            stamp = 0
        }
        driver.filled.append(V4L2DequeuedBuffer(index: index, bytesUsed: frame.bytesUsed ?? count,
                                                flags: frame.flags | timestampFlags, sequence: driver.sequence, timestamp: stamp))
        driver.sequence &+= 1
        wake()
    }

    private func nanoseconds(_ fraction: Fraction) -> Int64 {
        Int64(fraction.numerator) * 1_000_000_000 / Int64(max(fraction.denominator, 1))
    }

    private func wake() {
        _ = try? Posix.write(writeEnd, [1])
    }

    private func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while let count = try? Posix.read(readEnd, into: &bytes), count > 0 {}
    }

    private func now(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    // MARK: Requests, as a handle makes them

    fileprivate func opened() { lock.withLock { $0.openHandles += 1 } }
    fileprivate func closed() { lock.withLock { $0.openHandles -= 1 } }

    fileprivate func record<T>(_ name: String, _ body: (inout Driver) throws(SystemCallError) -> T) throws(SystemCallError) -> T {
        try lock.withLock { (driver) throws(SystemCallError) -> T in
            driver.requests.append(name)
            return try body(&driver)
        }
    }

    fileprivate var pollDescriptor: Int32 { readEnd }
    fileprivate var exists: Bool { lock.withLock { $0.exists } }

    fileprivate func setPriority(_ priority: V4L2Priority) throws(SystemCallError) {
        let error = priorityError
        try record("VIDIOC_S_PRIORITY") { (driver) throws(SystemCallError) in
            if let error { throw SystemCallError(call: "ioctl(VIDIOC_S_PRIORITY)", errno: error) }
            driver.priority = priority
        }
    }

    fileprivate func setFormat(_ format: V4L2CaptureFormat) throws(SystemCallError) -> V4L2CaptureFormat {
        try record("VIDIOC_S_FMT") { _ in }
        return currentFormat()
    }

    fileprivate func format() throws(SystemCallError) -> V4L2CaptureFormat {
        try record("VIDIOC_G_FMT") { _ in }
        return formatReply ?? currentFormat()
    }

    private func currentFormat() -> V4L2CaptureFormat {
        let compressed = V4L2PixelMapping.codecName(for: fourcc) != nil
        return V4L2CaptureFormat(pixelFormat: fourcc.code, width: width, height: height,
                                 bytesPerLine: compressed ? 0 : width, sizeImage: UInt32(bufferSize))
    }

    fileprivate func setInterval(_ asked: Fraction) throws(SystemCallError) -> Fraction? {
        try record("VIDIOC_S_PARM") { _ in }
        return intervalReply ?? interval
    }

    fileprivate func requestBuffers(_ count: UInt32) throws(SystemCallError) -> UInt32 {
        let size = bufferSize
        let limit = maxBuffers
        return try record("VIDIOC_REQBUFS") { (driver) throws(SystemCallError) -> UInt32 in
            guard !driver.streaming else { throw SystemCallError(call: "ioctl(VIDIOC_REQBUFS)", errno: EBUSY) }
            guard driver.mapped == 0 else { throw SystemCallError(call: "ioctl(VIDIOC_REQBUFS)", errno: EBUSY) }
            for buffer in driver.buffers { buffer.deallocate() }
            let allocated = min(count, limit)
            driver.buffers = (0..<allocated).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64) }
            driver.queued = []
            driver.filled = []
            return allocated
        }
    }

    fileprivate func queryBuffer(_ index: UInt32) throws(SystemCallError) -> V4L2BufferLocation {
        try record("VIDIOC_QUERYBUF") { (driver) throws(SystemCallError) -> V4L2BufferLocation in
            guard Int(index) < driver.buffers.count else { throw SystemCallError(call: "ioctl(VIDIOC_QUERYBUF)", errno: EINVAL) }
            return V4L2BufferLocation(index: index, offset: index * 4096, length: driver.buffers[Int(index)].count)
        }
    }

    fileprivate func map(_ location: V4L2BufferLocation) throws(SystemCallError) -> UnsafeMutableRawBufferPointer {
        try record("mmap") { (driver) throws(SystemCallError) -> UnsafeMutableRawBufferPointer in
            guard Int(location.index) < driver.buffers.count else { throw SystemCallError(call: "mmap", errno: EINVAL) }
            driver.mapped += 1
            return driver.buffers[Int(location.index)]
        }
    }

    fileprivate func unmap(_ buffer: UnsafeMutableRawBufferPointer) {
        _ = try? record("munmap") { driver in driver.mapped -= 1 }
    }

    fileprivate func queue(_ index: UInt32) throws(SystemCallError) {
        try record("VIDIOC_QBUF") { (driver) throws(SystemCallError) in
            if let code = driver.queueError { throw SystemCallError(call: "ioctl(VIDIOC_QBUF)", errno: code) }
            guard Int(index) < driver.buffers.count, !driver.queued.contains(Int(index)),
                  !driver.filled.contains(where: { $0.index == Int(index) }) else {
                throw SystemCallError(call: "ioctl(VIDIOC_QBUF)", errno: EINVAL)
            }
            driver.queued.append(Int(index))
            pump(&driver)
        }
    }

    fileprivate func dequeue() throws(SystemCallError) -> V4L2DequeuedBuffer {
        try record("VIDIOC_DQBUF") { (driver) throws(SystemCallError) -> V4L2DequeuedBuffer in
            if let code = driver.dequeueError { throw SystemCallError(call: "ioctl(VIDIOC_DQBUF)", errno: code) }
            guard driver.streaming, !driver.filled.isEmpty else {
                drain()
                if driver.pendingEmptyWakeup {
                    driver.pendingEmptyWakeup = false
                    driver.emptyWakeups += 1
                    pump(&driver)
                }
                throw SystemCallError(call: "ioctl(VIDIOC_DQBUF)", errno: EAGAIN)
            }
            driver.dequeued += 1
            let buffer = driver.filled.removeFirst()
            if driver.filled.isEmpty { drain() }
            pump(&driver)
            return buffer
        }
    }

    fileprivate func streamOn() throws(SystemCallError) {
        let streamedOn = stampClock.map { now($0) } ?? 0
        let refusal = streamOnError
        try record("VIDIOC_STREAMON") { (driver) throws(SystemCallError) in
            if let refusal { throw SystemCallError(call: "ioctl(VIDIOC_STREAMON)", errno: refusal) }
            if let code = driver.dequeueError { throw SystemCallError(call: "ioctl(VIDIOC_STREAMON)", errno: code) }
            guard !driver.buffers.isEmpty else { throw SystemCallError(call: "ioctl(VIDIOC_STREAMON)", errno: EINVAL) }
            if !driver.streaming {
                // The next frame is stamped now, whether this is the first STREAMON or a restart.
                driver.origin = streamedOn - Int64(driver.sequence) * nanoseconds(interval)
                driver.streamedOn = streamedOn
            }
            driver.streaming = true
            pump(&driver)
        }
    }

    fileprivate func streamOff() throws(SystemCallError) {
        try record("VIDIOC_STREAMOFF") { driver in
            driver.streaming = false
            driver.queued = []
            driver.filled = []
            drain()
        }
    }
}

/// A node opened on a fake camera: forwards every request to its driver
/// until closed, then answers EBADF.
final class FakeV4L2CameraHandle: V4L2StreamingNode, @unchecked Sendable {
    // @unchecked: `isOpen` is behind `state`; the camera is thread-safe.
    let camera: FakeV4L2Camera
    let throughLibv4l2: Bool
    /// Whether the handle is open, and whether it started streaming (closing it then stops streaming, as the kernel does).
    private let state = Locked((isOpen: true, streamed: false))

    init(camera: FakeV4L2Camera, throughLibv4l2: Bool) {
        self.camera = camera
        self.throughLibv4l2 = throughLibv4l2
        camera.opened()
    }

    deinit { close() }

    private func open(_ name: String) throws(SystemCallError) {
        guard state.withLock({ $0.isOpen }) else { throw SystemCallError(call: "ioctl(\(name))", errno: EBADF) }
    }

    // MARK: Probing

    func queryCapability() throws(SystemCallError) -> V4L2Capability {
        try open("VIDIOC_QUERYCAP")
        guard camera.exists else { throw SystemCallError(call: "ioctl(VIDIOC_QUERYCAP)", errno: ENODEV) }
        return camera.capability
    }

    func enumerateFormat(index: UInt32) throws(SystemCallError) -> V4L2FormatDescription? {
        try open("VIDIOC_ENUM_FMT")
        guard index == 0 else { return nil }
        let compressed = V4L2PixelMapping.codecName(for: camera.fourcc) != nil
        return V4L2FormatDescription(pixelFormat: camera.fourcc.code, flags: compressed ? V4L2FormatDescription.compressedFlag : 0,
                                     description: camera.fourcc.description)
    }

    func enumerateFrameSize(pixelFormat: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameSizeReply? {
        try open("VIDIOC_ENUM_FRAMESIZES")
        guard index == 0, pixelFormat == camera.fourcc.code else { return nil }
        return .discrete(width: camera.width, height: camera.height)
    }

    func enumerateFrameInterval(pixelFormat: UInt32, width: UInt32, height: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameIntervalReply? {
        try open("VIDIOC_ENUM_FRAMEINTERVALS")
        guard index == 0, pixelFormat == camera.fourcc.code else { return nil }
        return .discrete(camera.interval)
    }

    func queryControl(id: UInt32) throws(SystemCallError) -> V4L2ControlDescription? { nil }
    func queryMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> String? { nil }

    func controlValue(id: UInt32) throws(SystemCallError) -> Int64 {
        throw SystemCallError(call: "ioctl(VIDIOC_G_EXT_CTRLS)", errno: EINVAL)
    }

    func currentFormat() throws(SystemCallError) -> V4L2CurrentFormat {
        try open("VIDIOC_G_FMT")
        return V4L2CurrentFormat(pixelFormat: camera.fourcc.code, width: camera.width, height: camera.height)
    }

    func currentFrameInterval() throws(SystemCallError) -> Fraction? { camera.interval }

    // MARK: Streaming

    var bufferPollTarget: PollTarget { PollTarget(descriptor: camera.pollDescriptor, events: Int16(POLLIN)) }
    var nodeExists: Bool { camera.exists }

    func setPriority(_ priority: V4L2Priority) throws(SystemCallError) {
        try open("VIDIOC_S_PRIORITY")
        try camera.setPriority(priority)
    }

    func setCaptureFormat(_ format: V4L2CaptureFormat) throws(SystemCallError) -> V4L2CaptureFormat {
        try open("VIDIOC_S_FMT")
        return try camera.setFormat(format)
    }

    func captureFormat() throws(SystemCallError) -> V4L2CaptureFormat {
        try open("VIDIOC_G_FMT")
        return try camera.format()
    }

    func setFrameInterval(_ interval: Fraction) throws(SystemCallError) -> Fraction? {
        try open("VIDIOC_S_PARM")
        return try camera.setInterval(interval)
    }

    func requestBuffers(count: UInt32) throws(SystemCallError) -> UInt32 {
        try open("VIDIOC_REQBUFS")
        return try camera.requestBuffers(count)
    }

    func queryBuffer(index: UInt32) throws(SystemCallError) -> V4L2BufferLocation {
        try open("VIDIOC_QUERYBUF")
        return try camera.queryBuffer(index)
    }

    func mapBuffer(_ location: V4L2BufferLocation) throws(SystemCallError) -> UnsafeMutableRawBufferPointer {
        try open("mmap")
        return try camera.map(location)
    }

    func unmapBuffer(_ buffer: UnsafeMutableRawBufferPointer) { camera.unmap(buffer) }

    func queueBuffer(index: UInt32) throws(SystemCallError) {
        try open("VIDIOC_QBUF")
        try camera.queue(index)
    }

    func dequeueBuffer() throws(SystemCallError) -> V4L2DequeuedBuffer {
        try open("VIDIOC_DQBUF")
        return try camera.dequeue()
    }

    func streamOn() throws(SystemCallError) {
        try open("VIDIOC_STREAMON")
        try camera.streamOn()
        state.withLock { $0.streamed = true }
    }

    func streamOff() throws(SystemCallError) {
        try open("VIDIOC_STREAMOFF")
        try camera.streamOff()
    }

    /// Closing the handle that streams stops streaming, as the kernel does.
    func close() {
        let was = state.withLock { state in
            defer { state.isOpen = false }
            return state
        }
        guard was.isOpen else { return }
        if was.streamed, camera.isStreaming { try? camera.streamOff() }
        camera.closed()
    }
}
