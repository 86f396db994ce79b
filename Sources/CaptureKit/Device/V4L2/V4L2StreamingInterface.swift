#if canImport(Glibc)
import Glibc
#endif

/// The part of the V4L2 seam a camera streams through: the capture format
/// and frame interval, the record priority, and the queue of memory-mapped
/// buffers the driver fills. Each method is one request, answering what the
/// kernel answered (errors included: DQBUF with nothing ready fails with
/// EAGAIN, a vanished device with ENODEV), so the logic over it (the buffer
/// queue, the capture loop) runs unchanged over a fake camera in tests.
/// `KernelV4L2Node` implements it. Methods may be called from any thread;
/// the buffer queue orders them.
protocol V4L2StreamingNode: V4L2Node, Sendable {
    /// Whether requests go through libv4l2, whose converted frames live in
    /// memory it frees when the node closes.
    var throughLibv4l2: Bool { get }
    /// What to poll(2) for to learn that a filled buffer can be dequeued
    /// (POLLIN), or that the queue failed (POLLERR, POLLHUP).
    var bufferPollTarget: PollTarget { get }
    /// Whether the node is still there in the file system: an unplugged
    /// device's node goes away.
    var nodeExists: Bool { get }

    /// VIDIOC_S_PRIORITY on this handle. Raising it to `.record` fails with
    /// EBUSY while another handle holds `.record`; drivers without
    /// priorities answer ENOTTY or EINVAL.
    func setPriority(_ priority: V4L2Priority) throws(SystemCallError)
    /// VIDIOC_S_FMT for single-planar capture: answers the format the driver
    /// chose, which may differ from the one asked for.
    func setCaptureFormat(_ format: V4L2CaptureFormat) throws(SystemCallError) -> V4L2CaptureFormat
    /// VIDIOC_G_FMT for single-planar capture.
    func captureFormat() throws(SystemCallError) -> V4L2CaptureFormat
    /// VIDIOC_S_PARM with a time per frame: answers the one the driver set,
    /// or nil when it does not take one (no V4L2_CAP_TIMEPERFRAME).
    func setFrameInterval(_ interval: Fraction) throws(SystemCallError) -> Fraction?
    /// VIDIOC_REQBUFS for memory-mapped capture buffers: answers how many the
    /// driver allocated (0 frees them all).
    func requestBuffers(count: UInt32) throws(SystemCallError) -> UInt32
    /// VIDIOC_QUERYBUF: where buffer `index` is to be mapped from.
    func queryBuffer(index: UInt32) throws(SystemCallError) -> V4L2BufferLocation
    /// mmap of a buffer at the place QUERYBUF gave.
    func mapBuffer(_ location: V4L2BufferLocation) throws(SystemCallError) -> UnsafeMutableRawBufferPointer
    /// munmap of a buffer `mapBuffer` mapped.
    func unmapBuffer(_ buffer: UnsafeMutableRawBufferPointer)
    /// VIDIOC_QBUF: hands buffer `index` to the driver to fill.
    func queueBuffer(index: UInt32) throws(SystemCallError)
    /// VIDIOC_DQBUF: the next filled buffer; fails with EAGAIN when none is ready.
    func dequeueBuffer() throws(SystemCallError) -> V4L2DequeuedBuffer
    /// VIDIOC_STREAMON.
    func streamOn() throws(SystemCallError)
    /// VIDIOC_STREAMOFF: the driver gives back every queued buffer.
    func streamOff() throws(SystemCallError)
    /// Closes the node now; later calls fail with EBADF. Mapped buffers stay
    /// readable until unmapped.
    func close()
}

/// The single-planar capture format (struct v4l2_pix_format) that
/// VIDIOC_S_FMT sets and VIDIOC_G_FMT reads.
struct V4L2CaptureFormat: Sendable, Hashable {
    /// The fourcc code.
    var pixelFormat: UInt32
    /// The frame size in pixels.
    var width: UInt32
    var height: UInt32
    /// Bytes from one row to the next; 0 for compressed formats.
    var bytesPerLine: UInt32
    /// The largest frame in bytes.
    var sizeImage: UInt32

    init(pixelFormat: UInt32, width: UInt32, height: UInt32, bytesPerLine: UInt32 = 0, sizeImage: UInt32 = 0) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        self.sizeImage = sizeImage
    }
}

/// Where a driver's buffer is mapped from: VIDIOC_QUERYBUF's reply.
struct V4L2BufferLocation: Sendable, Hashable {
    /// Which of the driver's buffers it is.
    var index: UInt32
    /// The offset to pass to mmap.
    var offset: UInt32
    /// Its size in bytes.
    var length: Int

    init(index: UInt32, offset: UInt32, length: Int) {
        self.index = index
        self.offset = offset
        self.length = length
    }
}

/// A dequeued capture buffer: what VIDIOC_DQBUF said about it.
struct V4L2DequeuedBuffer: Sendable, Hashable {
    /// Which of the driver's buffers it is.
    var index: Int
    /// How many bytes of it the driver filled (BYTESUSED).
    var bytesUsed: Int
    /// `v4l2_buffer.flags`: keyframe, error, the timestamp's clock (V4L2BufferFlags, V4L2TimestampClock).
    var flags: UInt32
    /// The driver's frame counter; gaps are frames it dropped.
    var sequence: UInt32
    /// The driver's stamp in nanoseconds, on the clock `flags` names.
    var timestamp: Int64
    /// Set by the buffer queue: the driver handed back a buffer the reader
    /// had not queued (v4l2loopback's writer reuses buffers a reader still
    /// holds), so its bytes may be changing under whoever holds it.
    var wasNotQueued = false

    init(index: Int, bytesUsed: Int, flags: UInt32, sequence: UInt32, timestamp: Int64) {
        self.index = index
        self.bytesUsed = bytesUsed
        self.flags = flags
        self.sequence = sequence
        self.timestamp = timestamp
    }
}

/// Opens a node for streaming through any V4L2 interface. Interfaces whose
/// nodes cannot stream answer ENOTTY, as a driver without the request would.
func openStreamingNode(_ interface: any V4L2Interface, path: String, options: V4L2OpenOptions) throws(SystemCallError) -> any V4L2StreamingNode {
    let node = try interface.open(path, options: options)
    guard let streamingNode = node as? any V4L2StreamingNode else {
        throw SystemCallError(call: "ioctl(VIDIOC_REQBUFS)", errno: ENOTTY)
    }
    return streamingNode
}
