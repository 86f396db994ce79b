import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// Streaming on a kernel node: single-planar capture into memory-mapped buffers.
extension KernelV4L2Node: V4L2StreamingNode {
    private static let bufferType = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    private static let memory = V4L2_MEMORY_MMAP.rawValue

    var bufferPollTarget: PollTarget {
        PollTarget(descriptor: fd, events: Int16(POLLIN))
    }

    var nodeExists: Bool { Posix.isAccessible(path) }

    func setCaptureFormat(_ wanted: V4L2CaptureFormat) throws(SystemCallError) -> V4L2CaptureFormat {
        var format = v4l2_format()
        format.type = Self.bufferType
        format.fmt.pix.width = wanted.width
        format.fmt.pix.height = wanted.height
        format.fmt.pix.pixelformat = wanted.pixelFormat
        format.fmt.pix.field = V4L2_FIELD_ANY.rawValue
        try request("VIDIOC_S_FMT", cv4l2_VIDIOC_S_FMT, &format)
        return Self.captureFormat(format.fmt.pix)
    }

    func captureFormat() throws(SystemCallError) -> V4L2CaptureFormat {
        var format = v4l2_format()
        format.type = Self.bufferType
        try request("VIDIOC_G_FMT", cv4l2_VIDIOC_G_FMT, &format)
        return Self.captureFormat(format.fmt.pix)
    }

    private static func captureFormat(_ pix: v4l2_pix_format) -> V4L2CaptureFormat {
        V4L2CaptureFormat(pixelFormat: pix.pixelformat, width: pix.width, height: pix.height,
                          bytesPerLine: pix.bytesperline, sizeImage: pix.sizeimage)
    }

    func setFrameInterval(_ interval: Fraction) throws(SystemCallError) -> Fraction? {
        var parameters = v4l2_streamparm()
        parameters.type = Self.bufferType
        parameters.parm.capture.timeperframe = v4l2_fract(numerator: interval.numerator, denominator: interval.denominator)
        try request("VIDIOC_S_PARM", cv4l2_VIDIOC_S_PARM, &parameters)
        let capture = parameters.parm.capture
        guard capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0, capture.timeperframe.denominator != 0 else { return nil }
        return Fraction(capture.timeperframe.numerator, capture.timeperframe.denominator)
    }

    func requestBuffers(count: UInt32) throws(SystemCallError) -> UInt32 {
        var buffers = v4l2_requestbuffers()
        buffers.count = count
        buffers.type = Self.bufferType
        buffers.memory = Self.memory
        try request("VIDIOC_REQBUFS", cv4l2_VIDIOC_REQBUFS, &buffers)
        return buffers.count
    }

    func queryBuffer(index: UInt32) throws(SystemCallError) -> V4L2BufferLocation {
        var buffer = Self.buffer(index: index)
        try request("VIDIOC_QUERYBUF", cv4l2_VIDIOC_QUERYBUF, &buffer)
        return V4L2BufferLocation(index: index, offset: buffer.m.offset, length: Int(buffer.length))
    }

    func mapBuffer(_ location: V4L2BufferLocation) throws(SystemCallError) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: try descriptor.map(length: location.length, offset: location.offset), count: location.length)
    }

    func unmapBuffer(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let address = buffer.baseAddress else { return }
        descriptor.unmap(address, length: buffer.count)
    }

    func queueBuffer(index: UInt32) throws(SystemCallError) {
        var buffer = Self.buffer(index: index)
        try request("VIDIOC_QBUF", cv4l2_VIDIOC_QBUF, &buffer)
    }

    func dequeueBuffer() throws(SystemCallError) -> V4L2DequeuedBuffer {
        var buffer = Self.buffer(index: 0)
        try request("VIDIOC_DQBUF", cv4l2_VIDIOC_DQBUF, &buffer)
        let stamp = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1_000
        return V4L2DequeuedBuffer(index: Int(buffer.index), bytesUsed: Int(buffer.bytesused), flags: buffer.flags,
                                  sequence: buffer.sequence, timestamp: stamp)
    }

    func streamOn() throws(SystemCallError) {
        var type = Int32(Self.bufferType)
        try request("VIDIOC_STREAMON", cv4l2_VIDIOC_STREAMON, &type)
    }

    func streamOff() throws(SystemCallError) {
        var type = Int32(Self.bufferType)
        try request("VIDIOC_STREAMOFF", cv4l2_VIDIOC_STREAMOFF, &type)
    }

    /// A capture buffer of this memory type with `index`, for QUERYBUF, QBUF and DQBUF.
    private static func buffer(index: UInt32) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = bufferType
        buffer.memory = memory
        return buffer
    }
}
