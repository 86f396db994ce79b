import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

/// stdout and stderr written whole, without the C library's buffer: JSON
/// lines and diagnostics come from several threads and must reach a reader
/// at once and uninterrupted (FileHandle's place; FileHandle is Foundation's).
package enum StandardStream {
    case output
    case error

    private var descriptor: Int32 { self == .output ? STDOUT_FILENO : STDERR_FILENO }

    /// Writes all of `text`, going on after partial writes (CaptureKit's
    /// `Posix.write` retries interrupted ones). A
    /// stream that cannot be written (closed pipe, full disk) loses the
    /// text: there is nowhere left to say so.
    package func write(_ text: String) {
        write(Array(text.utf8))
    }

    package func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                guard let written = try? Posix.write(descriptor, from: UnsafeRawBufferPointer(rebasing: buffer[offset...])),
                      written > 0 else { return }
                offset += written
            }
        }
    }
}
