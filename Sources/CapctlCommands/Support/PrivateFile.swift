import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

/// Files that hold what only the service's owner may read (the token file, the access
/// file, the view-link key): read only when no one else can read them, written whole
/// (a new file of mode 0600 renamed over the old one), never half.
package enum PrivateFile {
    /// The file's bytes, if it exists and only its owner can read it; nil when there is no such file.
    /// `option` names it in the messages (`--access-file`).
    package static func read(_ path: String, option: String) throws -> [UInt8]? {
        let descriptor: Int32
        do throws(SystemCallError) {
            descriptor = try Posix.open(path, O_RDONLY | O_CLOEXEC)
        } catch {
            if error.errno == ENOENT { return nil }
            throw CommandFailure("\(option) \(path): \(error.reason)", status: .noInput)
        }
        defer { try? Posix.close(descriptor, path: path) }
        guard let info = try? Posix.fstat(descriptor, path: path), (info.st_mode & S_IFMT) == S_IFREG else {
            throw CommandFailure("\(option) \(path): not a regular file", status: .usage)
        }
        guard info.st_mode & 0o077 == 0 else {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw CommandFailure("\(option) \(path) has mode \(mode): others could read it; chmod 600 \(path)", status: .usage)
        }
        do throws(SystemCallError) {
            return try Posix.read(descriptor, upTo: 4 << 20, path: path)
        } catch {
            throw CommandFailure("\(option) \(path): \(error.reason)", status: .noInput)
        }
    }

    /// Replaces the file with `bytes`: written to a new file of mode 0600 beside it,
    /// flushed, then renamed over it, so that a reader sees the old file or the new one.
    /// A file that exists keeps its owner and group (root adding a credential to the
    /// file of a service that runs as another user leaves it that user's).
    package static func write(_ bytes: [UInt8], to path: String, option: String) throws {
        let temporary = path + ".new-\(getpid())"
        let existing = try? Posix.stat(path)
        // One left by a writer of this PID that crashed before its rename.
        try? Posix.unlink(temporary)
        do throws(SystemCallError) {
            let descriptor = try Posix.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
            do throws(SystemCallError) {
                if let existing, existing.st_uid != geteuid() || existing.st_gid != getegid() {
                    try Posix.fchown(descriptor, owner: existing.st_uid, group: existing.st_gid, path: temporary)
                }
                var rest = bytes[...]
                while !rest.isEmpty {
                    let written = try Posix.write(descriptor, Array(rest), path: temporary)
                    rest = rest.dropFirst(written)
                }
                try Posix.fsync(descriptor, path: temporary)
                try Posix.close(descriptor, path: temporary)
            } catch {
                try? Posix.close(descriptor, path: temporary)
                throw error
            }
            try Posix.rename(temporary, to: path)
        } catch {
            try? Posix.unlink(temporary)
            throw CommandFailure("\(option) \(path): \(error.reason)", status: .cannotCreate)
        }
    }
}
