import Synchronization

/// The files this process's recordings are writing now, so that no
/// retention deletes one (a service running two recordings of one template
/// in one folder: each sees the other's file being written as one of its
/// own). A file is listed from the moment its writer is made until it is
/// finished or given up.
enum RecordingFilesInUse {
    /// Paths, each with how many writers hold it (the same name may be made again).
    private static let paths = Mutex<[String: Int]>([:])

    static func add(_ path: String) {
        paths.withLock { $0[path, default: 0] += 1 }
    }

    static func remove(_ path: String) {
        paths.withLock { paths in
            guard let count = paths[path] else { return }
            paths[path] = count > 1 ? count - 1 : nil
        }
    }

    static func contains(_ path: String) -> Bool {
        paths.withLock { $0[path] != nil }
    }
}
