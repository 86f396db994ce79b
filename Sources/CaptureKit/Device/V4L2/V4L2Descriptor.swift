import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// An open V4L2 node's descriptor and the one way requests reach it:
/// directly (`Posix`) or through libv4l2, which converts formats the driver
/// lacks. Opening, every ioctl, mapping buffers and closing go through the
/// checked wrapper (EINTR retried, the request named in the error).
struct V4L2Descriptor: Sendable {
    let fd: Int32
    /// Whether calls go through libv4l2 (v4l2_open, v4l2_ioctl, v4l2_mmap …).
    let throughLibv4l2: Bool

    /// Opens `path` read-write, non-blocking (a query or DQBUF must never
    /// wait: a capture loop waits in poll(), where it also sees its stop
    /// signal) and close-on-exec (descriptors must not leak into children
    /// such as a shell hook).
    static func open(_ path: String, throughLibv4l2: Bool) throws(SystemCallError) -> V4L2Descriptor {
        let flags = O_RDWR | O_NONBLOCK | O_CLOEXEC
        guard throughLibv4l2 else {
            return V4L2Descriptor(fd: try Posix.open(path, flags), throughLibv4l2: false)
        }
        // cv4l2_libv4l2_open: v4l2_open is variadic, which Swift cannot call.
        let fd = try systemCall("v4l2_open(\(path))") { cv4l2_libv4l2_open(path, flags) }
        return V4L2Descriptor(fd: fd, throughLibv4l2: true)
    }

    /// Issues one ioctl with `argument`; `name` (`VIDIOC_QBUF`) names it in errors.
    func request<T>(_ name: String, _ number: UInt, _ argument: inout T) throws(SystemCallError) {
        let (fd, libv4l2) = (self.fd, throughLibv4l2)
        try withUnsafeMutablePointer(to: &argument) { (pointer) throws(SystemCallError) in
            guard libv4l2 else {
                try Posix.ioctl(fd, name, number, UnsafeMutableRawPointer(pointer))
                return
            }
            // cv4l2_libv4l2_ioctl: v4l2_ioctl is variadic, which Swift cannot call.
            try systemCall("ioctl(\(name))") { cv4l2_libv4l2_ioctl(fd, number, pointer) }
        }
    }

    /// Like `request`, but an index past the end of an enumeration (EINVAL) answers false.
    func enumerate<T>(_ name: String, _ number: UInt, _ argument: inout T) throws(SystemCallError) -> Bool {
        do {
            try request(name, number, &argument)
            return true
        } catch where error.errno == EINVAL {
            return false
        }
    }

    /// VIDIOC_G/S/TRY_EXT_CTRLS for one control of any class (current values).
    func extendedControls(_ name: String, _ number: UInt, _ control: inout v4l2_ext_control) throws(SystemCallError) {
        try withUnsafeMutablePointer(to: &control) { (pointer) throws(SystemCallError) in
            var controls = v4l2_ext_controls()
            controls.which = UInt32(V4L2_CTRL_WHICH_CUR_VAL)
            controls.count = 1
            controls.controls = pointer
            try request(name, number, &controls)
        }
    }

    /// Maps a buffer the driver allocated (its QUERYBUF offset and length), shared and read-write.
    func map(length: Int, offset: UInt32) throws(SystemCallError) -> UnsafeMutableRawPointer {
        let protection = PROT_READ | PROT_WRITE
        guard throughLibv4l2 else {
            return try Posix.mmap(length: length, protection: protection, flags: MAP_SHARED, fd: fd, offset: Int64(offset))
        }
        let fd = self.fd
        return try systemCall("v4l2_mmap") { () -> UnsafeMutableRawPointer? in
            let address = v4l2_mmap(nil, length, protection, MAP_SHARED, fd, Int64(offset))
            return address == MAP_FAILED ? nil : address
        }
    }

    func unmap(_ address: UnsafeMutableRawPointer, length: Int) {
        guard throughLibv4l2 else {
            try? Posix.munmap(address, length: length)
            return
        }
        _ = try? systemCall("v4l2_munmap") { v4l2_munmap(address, length) }
    }

    /// Closes the descriptor (through libv4l2 also frees its conversion buffers).
    func close() {
        guard throughLibv4l2 else {
            try? Posix.close(fd)
            return
        }
        let fd = self.fd
        // Not retried after EINTR, as close(2) (see Posix.close).
        _ = try? checkedCall({ "v4l2_close" }, retryingInterrupts: false, failed: { $0 == -1 },
                             errno: { _ in Glibc.errno }) { v4l2_close(fd) }
    }
}
