#if canImport(Glibc)
import Glibc
#endif

/// Whether a recording's first file (or a photo) can be made, checked
/// before any device opens so that a mistake costs no camera start.
/// (`package`: `snap` checks its photos' paths with it.)
package enum RecordingDestinationCheck {
    /// The longest file name Linux file systems take (NAME_MAX), and the longest path (PATH_MAX, its NUL left out).
    static let longestName = 255, longestPath = 4095

    package static func check(_ path: String, overwrites: Bool) throws(RecordingError) {
        // A template's fields can make a name no file system takes (%9999n): refused here, with
        // the start of the name only, not left to fail when the file is made.
        let name = path.split(separator: "/").last.map(String.init) ?? path
        if name.utf8.count > longestName || path.utf8.count > longestPath {
            let shown = path.utf8.count > 120 ? String(path.prefix(100)) + "…" : path
            let (what, bytes, most) = name.utf8.count > longestName ? ("name", name.utf8.count, longestName) : ("path", path.utf8.count, longestPath)
            throw .cannotCreate(path: shown, reason: "its \(what) is \(bytes) bytes long, and a file's \(what) holds at most \(most)")
        }
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
