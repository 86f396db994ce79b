/// A loop recording's retention at work (see `RecordingRetention`): each
/// file finished joins the files kept, the bounds delete the oldest once a
/// file is finished (the age bound also once a second), and the free-space
/// floor deletes the oldest rather than stop. Deleting happens on the
/// writing thread, between samples, so the delegate hears a file deleted
/// after the file whose finish led to it. Writing thread only.
extension FileRecording {
    /// A finished file joins the files kept (when it is there: a writer
    /// that wrote nothing decodable removes its file).
    func retain(_ path: String) {
        guard retained != nil, let file = RetainedFile.regular(path) else { return }
        retained?.add(file)
    }

    /// Deletes what the bounds condemn now.
    func applyRetention() {
        guard let retained else { return }
        lastRetentionCheck = MonotonicClock.nowNanoseconds()
        let now = Double(MonotonicClock.realtimeNanoseconds()) / 1e9
        for (file, reason) in retained.condemned(now: now, inUse: RecordingFilesInUse.contains) {
            delete(file, reason: reason)
        }
    }

    /// The age bound, once a second (files age without any being finished).
    func checkRetentionAge() {
        guard retained?.retention.maxAge != nil else { return }
        if MonotonicClock.nowNanoseconds() - lastRetentionCheck >= 1_000_000_000 { applyRetention() }
    }

    /// Deletes the oldest files until `bytes` are freed (at the free-space
    /// floor); answers whether any was deleted. The limits count what was
    /// freed until the volume is next asked.
    func reclaimSpace(_ bytes: Int64) -> Bool {
        var freed: Int64 = 0
        var deletedAny = false
        // `delete` forgets each file it is given, deleted or not: the loop ends.
        while freed < bytes, let oldest = retained?.oldest(inUse: RecordingFilesInUse.contains) {
            if let gone = delete(oldest, reason: .lowSpace) {
                freed += gone
                deletedAny = true
            }
        }
        limits.freed(freed)
        return deletedAny
    }

    /// Deletes one file if it is still a regular file there, and reports
    /// it; answers the bytes it held (nil when it was not deleted). Either
    /// way the retention forgets it: a file it cannot delete (its folder
    /// not writable) is left as it is and no longer counted.
    @discardableResult
    func delete(_ file: RetainedFile, reason: RecordingFileDeletionReason) -> Int64? {
        retained?.remove(file.path)
        // lstat again: only a regular file is deleted, never what replaced it.
        guard let now = RetainedFile.regular(file.path), (try? Posix.unlink(file.path)) != nil else { return nil }
        lock.withLock {
            stats.files.removeAll { $0 == file.path }
            stats.deletedFileCount += 1
            stats.deletedBytes += now.bytes
        }
        delegateCall { $1.fileOutput($0, didDeleteFile: file.path, bytes: now.bytes, reason: reason) }
        return now.bytes
    }
}
