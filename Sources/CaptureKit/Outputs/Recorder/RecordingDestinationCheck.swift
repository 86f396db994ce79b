#if canImport(Glibc)
import Glibc
#endif

/// Whether a recording's first file (or a photo) can be made, checked
/// before any device opens so that a mistake costs no camera start.
/// (`package`: `snap` checks its photos' paths with it.)
package enum RecordingDestinationCheck {
    package static func check(_ path: String, overwrites: Bool) throws(RecordingError) {
        if let existing = try? Posix.lstat(path) {
            if !overwrites { throw .outputExists(path: path) }
            if (existing.st_mode & S_IFMT) == S_IFDIR { throw .cannotCreate(path: path, reason: "is a directory") }
        }
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let target = folder.isEmpty ? "/" : folder
        guard let info = try? Posix.stat(target), (info.st_mode & S_IFMT) == S_IFDIR else {
            throw .cannotCreate(path: path, reason: "the directory \(target) does not exist")
        }
        do { try Posix.access(target, W_OK) } catch {
            throw .cannotCreate(path: path, reason: "the directory \(target) is not writable (\(error.reason))")
        }
    }
}
