/// A retention's bookkeeping: the recording's finished files, oldest
/// first, and which of them its bounds condemn. Values only: deleting is
/// the recording's (`FileRecording+Retention.swift`). Writing thread only.
struct RetainedFiles {
    let retention: RecordingRetention
    /// Oldest first: the files found when the recording began, then its own in the order it finished them.
    private(set) var files: [RetainedFile]

    init(retention: RecordingRetention, existing: [RetainedFile] = []) {
        self.retention = retention
        files = existing
    }

    /// A file the recording finished: the newest.
    mutating func add(_ file: RetainedFile) {
        files.removeAll { $0.path == file.path }
        files.append(file)
    }

    /// Forgets a file (deleted, or gone).
    mutating func remove(_ path: String) {
        files.removeAll { $0.path == path }
    }

    /// The files the bounds condemn at `now` (seconds since the epoch),
    /// oldest first, each with the first bound it passes (age, then count,
    /// then size). Files for which `inUse` answers true (being written) are
    /// neither counted nor condemned. The newest file is condemned only by
    /// its age: a count keeps at least one, and a size bound the file just
    /// finished even when it alone passes it.
    func condemned(now: Double, inUse: (String) -> Bool = { _ in false }) -> [(file: RetainedFile, reason: RecordingFileDeletionReason)] {
        var kept = files.filter { !inUse($0.path) }
        var result: [(file: RetainedFile, reason: RecordingFileDeletionReason)] = []
        if let maxAge = retention.maxAge, maxAge.isNumeric {
            let oldest = now - maxAge.seconds
            for file in kept where file.modified < oldest { result.append((file, .maxAge)) }
            kept.removeAll { $0.modified < oldest }
        }
        if let maxFiles = retention.maxFiles, kept.count > max(1, maxFiles) {
            let excess = kept.count - max(1, maxFiles)
            result += kept.prefix(excess).map { ($0, .maxFiles) }
            kept.removeFirst(excess)
        }
        if let maxBytes = retention.maxBytes {
            var total = kept.reduce(Int64(0)) { $0 + $1.bytes }
            while kept.count > 1, total > maxBytes {
                let oldest = kept.removeFirst()
                total -= oldest.bytes
                result.append((oldest, .maxBytes))
            }
        }
        // Oldest first, as they are listed.
        let order = Dictionary(files.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { first, _ in first })
        return result.sorted { (order[$0.file.path] ?? 0) < (order[$1.file.path] ?? 0) }
    }

    /// The oldest file not in use, for the free-space floor.
    func oldest(inUse: (String) -> Bool = { _ in false }) -> RetainedFile? {
        files.first { !inUse($0.path) }
    }

    var totalBytes: Int64 { files.reduce(0) { $0 + $1.bytes } }
}
