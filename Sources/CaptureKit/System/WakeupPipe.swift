#if canImport(Glibc)
import Glibc
#endif

/// A pipe whose read end a loop polls to be woken from another thread:
/// both ends close-on-exec and non-blocking. (A pipe, not an eventfd:
/// Glibc's Swift module exports neither eventfd nor pipe2.)
struct WakeupPipe {
    /// The end to poll and drain; -1 when the pipe could not be made.
    let readEnd: Int32
    /// The end a waker writes a byte to.
    let writeEnd: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
        } else {
            ends = [-1, -1]
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Makes the read end readable.
    func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(writeEnd, &one, 1)
    }

    /// Empties the read end, so that the next poll waits again.
    func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while Glibc.read(readEnd, &bytes, bytes.count) > 0 {}
    }

    func close() {
        if readEnd >= 0 { Glibc.close(readEnd) }
        if writeEnd >= 0 { Glibc.close(writeEnd) }
    }
}
