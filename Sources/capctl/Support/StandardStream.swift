#if canImport(Glibc)
import Glibc
#endif

/// stdout and stderr written whole, without the C library's buffer: JSON
/// lines and diagnostics come from several threads and must reach a reader
/// at once and uninterrupted (FileHandle's place; FileHandle is Foundation's).
enum StandardStream {
    case output
    case error

    private var descriptor: Int32 { self == .output ? STDOUT_FILENO : STDERR_FILENO }

    /// Writes all of `text`, retrying interrupted and partial writes. A
    /// stream that cannot be written (closed pipe, full disk) loses the
    /// text: there is nowhere left to say so.
    func write(_ text: String) {
        write(Array(text.utf8))
    }

    func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}
