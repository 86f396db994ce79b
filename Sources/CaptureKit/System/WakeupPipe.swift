#if canImport(Glibc)
import Glibc
#endif

/// A pipe whose read end a loop polls to be woken from another thread:
/// both ends close-on-exec and non-blocking. (A pipe, not an eventfd:
/// Glibc's Swift module exports neither eventfd nor pipe2.)
struct WakeupPipe: Sendable {
    /// The end to poll and drain; -1 when the pipe could not be made.
    let readEnd: Int32
    /// The end a waker writes a byte to.
    let writeEnd: Int32

    init() {
        let ends = (try? Posix.nonBlockingPipe()) ?? (readEnd: -1, writeEnd: -1)
        readEnd = ends.readEnd
        writeEnd = ends.writeEnd
    }

    /// Makes the read end readable. A full pipe is readable already, so
    /// EAGAIN is as good as a byte written.
    func wake() {
        _ = try? Posix.write(writeEnd, [1])
    }

    /// Empties the read end, so that the next poll waits again.
    func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while let count = try? Posix.read(readEnd, into: &bytes), count > 0 {}
    }

    func close() {
        if readEnd >= 0 { try? Posix.close(readEnd) }
        if writeEnd >= 0 { try? Posix.close(writeEnd) }
    }
}

extension WakeupPipe {
    /// A wakeup pipe, or the call that failed (`pipe`, `fcntl`).
    static func make() throws(SystemCallError) -> WakeupPipe {
        WakeupPipe(ends: try Posix.nonBlockingPipe())
    }

    private init(ends: (readEnd: Int32, writeEnd: Int32)) {
        readEnd = ends.readEnd
        writeEnd = ends.writeEnd
    }
}
