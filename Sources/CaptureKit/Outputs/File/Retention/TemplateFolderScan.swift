#if canImport(Glibc)
import Glibc
#endif

/// A file a retention may delete: its path (as the recording names its
/// files: the template's folder part and the name), its size, and when it
/// was last written (seconds since the epoch).
struct RetainedFile: Sendable, Hashable {
    var path: String
    var bytes: Int64
    var modified: Double

    /// What lstat(2) says of `path`, when it is a regular file (never a
    /// link, a folder or anything else).
    static func regular(_ path: String) -> RetainedFile? {
        guard let info = try? Posix.lstat(path), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return RetainedFile(path: path, bytes: Int64(info.st_size),
                            modified: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }
}

/// The files a template's folder already holds that the template could
/// have produced (`FileNameTemplate.match(fileName:)`): those a retention
/// counts, oldest first, and the highest number any such name has.
struct TemplateFolderScan {
    /// The regular files, oldest first: by the time their names hold, then
    /// their number, their camera, their last modification.
    var files: [RetainedFile] = []
    /// The highest number (`%n`, or a template without it its `-N`) of any
    /// name that matches, whatever it names (a folder in the way counts); 0 for none.
    var highestNumber = 0

    /// Reads the template's folder; an unreadable folder (or one the
    /// template's folder part cannot name) holds nothing.
    init(_ template: FileNameTemplate) {
        guard let (prefix, _) = template.folderPart, let folder = template.folder,
              let names = try? Posix.directoryEntries(folder) else { return }
        var found: [(file: RetainedFile, match: FileNameTemplateMatch)] = []
        for name in names {
            guard let match = template.match(fileName: name) else { continue }
            highestNumber = max(highestNumber, match.number)
            if let file = RetainedFile.regular(prefix + name) { found.append((file, match)) }
        }
        found.sort { first, second in
            let (a, b) = (first.match, second.match)
            if a.timeKey != b.timeKey { return a.timeKey.lexicographicallyPrecedes(b.timeKey) }
            if a.number != b.number { return a.number < b.number }
            if a.camera != b.camera { return (a.camera ?? 0) < (b.camera ?? 0) }
            if first.file.modified != second.file.modified { return first.file.modified < second.file.modified }
            return first.file.path < second.file.path
        }
        files = found.map(\.file)
    }
}
