import CapctlCommands
import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The service's folder (--dir): every name a request gives is relative to
/// it, and nothing a request names reaches outside it, whether by an
/// absolute path, `..`, or a symbolic link.
package struct ServiceFolder: Sendable {
    /// The folder's absolute path, with no symbolic link in it.
    package let root: String

    /// A file the folder holds.
    package struct Entry: Encodable, Sendable {
        /// Its name relative to the folder.
        package let name: String
        package let bytes: Int64
        /// Its last change, as an ISO 8601 UTC time.
        package let modified: String
    }

    /// The path `name` stands for inside the folder. `name` is relative, has no
    /// `.` or `..` part, and its folder (which must exist) resolves inside the folder.
    package func path(for name: String, what: String = "file") throws(ServiceError) -> String {
        guard !name.isEmpty, name.utf8.count <= 1024 else {
            throw ServiceError(.badRequest, "\(what) must be a name of 1 to 1024 bytes inside the service's folder, such as 'door-%Y%m%d-%H%M%S.mp4'")
        }
        try Self.refuseControlCharacters(in: name, what: what)
        guard !name.hasPrefix("/") else {
            throw ServiceError(.badRequest, "\(what) '\(name)' is absolute; give a name relative to the service's folder")
        }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }) else {
            throw ServiceError(.badRequest, "\(what) '\(name)' may not hold '..', '.' or an empty part; give a name inside the service's folder")
        }
        let folder = parts.count > 1 ? root + "/" + parts.dropLast().joined(separator: "/") : root
        guard let real = try? Posix.realpath(folder) else {
            throw ServiceError(.badRequest, "\(what) '\(name)': the folder \(parts.dropLast().joined(separator: "/")) does not exist in the service's folder")
        }
        guard real == root || real.hasPrefix(root + "/") else {
            throw ServiceError(.badRequest, "\(what) '\(name)' leads out of the service's folder through a symbolic link")
        }
        return root + "/" + name
    }

    /// The path of a file name template (a recording's file, with %n and
    /// strftime fields) inside the folder: as `path(for:)`, and its fields
    /// stay in the last part, where none writes a '/' (%D and %x would), so
    /// that every name it expands to lies in the folder checked here.
    package func path(forTemplate name: String, what: String = "file") throws(ServiceError) -> String {
        let path = try path(for: name, what: what)
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        if parts.dropLast().contains(where: { $0.contains("%") }) {
            throw ServiceError(.badRequest, "\(what) '\(name)': % fields may only be in the file's own name, not in its folder")
        }
        var index = name.startIndex
        while let percent = name[index...].firstIndex(of: "%") {
            var field = name.index(after: percent)
            while field < name.endIndex, name[field].isNumber { field = name.index(after: field) }
            guard field < name.endIndex else { break }
            if name[field] == "D" || name[field] == "x" {
                throw ServiceError(.badRequest, "\(what) '\(name)': %\(name[field]) writes '/' (month/day/year); use %Y%m%d or %F")
            }
            index = name.index(after: field)
        }
        return path
    }

    /// Refuses a name that holds a control character (U+0000 to U+001F, U+007F): no
    /// name a person gives holds one, and one written to a log, a terminal or a page
    /// could end its line or change what follows.
    package static func refuseControlCharacters(in name: String, what: String) throws(ServiceError) {
        guard let control = name.unicodeScalars.first(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return }
        let code = String(control.value, radix: 16, uppercase: true)
        throw ServiceError(.badRequest, "\(what) holds a control character (0x\(code.count < 2 ? "0" + code : code)); give a name without any")
    }

    /// A regular file in the folder, by its relative name (a symbolic link is none).
    /// A name with a control character is refused as such (400), not looked for.
    package func existingFile(_ name: String) throws(ServiceError) -> (path: String, bytes: Int64) {
        try Self.refuseControlCharacters(in: name, what: "name")
        let path: String
        do { path = try self.path(for: name, what: "name") } catch { throw ServiceError(.notFound, "no file '\(name)' in the service's folder") }
        guard let info = try? Posix.lstat(path), (info.st_mode & S_IFMT) == S_IFREG else {
            throw ServiceError(.notFound, "no file '\(name)' in the service's folder")
        }
        return (path, Int64(info.st_size))
    }

    /// Every regular file in the folder and its subfolders (symbolic links are
    /// not followed), by name; hidden files are left out.
    package func entries() -> [Entry] {
        var found: [Entry] = []
        collect(relative: "", into: &found, depth: 0)
        return found.sorted { $0.name < $1.name }
    }

    private func collect(relative: String, into found: inout [Entry], depth: Int) {
        guard depth < 8, let names = try? Posix.directoryEntries(relative.isEmpty ? root : root + "/" + relative) else { return }
        for name in names {
            guard !name.hasPrefix(".") else { continue }
            let child = relative.isEmpty ? name : relative + "/" + name
            guard let info = try? Posix.lstat(root + "/" + child) else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                found.append(Entry(name: child, bytes: Int64(info.st_size), modified: Self.isoTime(info.st_mtim.tv_sec)))
            case S_IFDIR:
                collect(relative: child, into: &found, depth: depth + 1)
            default:
                continue
            }
        }
    }

    /// Free space on the folder's volume, in bytes.
    package var freeSpace: Int64? { CaptureFileOutput.freeSpace(near: root) }

    static func isoTime(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
