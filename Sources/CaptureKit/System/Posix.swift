import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// The system calls CaptureKit makes, each through the checked wrapper: a
/// signal's EINTR is retried, a failure throws `SystemCallError` naming the
/// call (and the file, where the caller gives its path) with the errno kept,
/// and tests can force failures (`SystemCallMocking`). Nothing else in the
/// library calls these functions of the C library directly; libv4l2 and
/// alsa-lib calls go through the same runners in Device/. The command line
/// (`capctl`, a module of this package) uses the ones marked `package`.
package enum Posix {
    /// The name a call is reported under: `read(/dev/video0)`, or `read` without a path.
    private static func named(_ call: String, _ path: String?) -> String {
        path.map { "\(call)(\($0))" } ?? call
    }

    // MARK: Descriptors

    /// open(2). Callers pass O_CLOEXEC so descriptors do not leak into children.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemCallError) -> Int32 {
        try systemCall("open(\(path))") { Glibc.open(path, flags, mode) }
    }

    /// close(2), not retried after EINTR: Linux has released the descriptor
    /// by then, and a second close could hit one another thread just opened.
    package static func close(_ fd: Int32, path: String? = nil) throws(SystemCallError) {
        _ = try checkedCall({ named("close", path) }, retryingInterrupts: false, failed: { $0 == -1 },
                            errno: { _ in Glibc.errno }) { Glibc.close(fd) }
    }

    /// read(2): the bytes read, 0 at the end of the file.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String? = nil) throws(SystemCallError) -> Int {
        try systemCall(named("read", path)) { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// read(2) into the whole of `bytes`: the bytes read, 0 at the end of the file.
    package static func read(_ fd: Int32, into bytes: inout [UInt8], path: String? = nil) throws(SystemCallError) -> Int {
        let count = bytes.count
        return try systemCall(named("read", path)) { Glibc.read(fd, &bytes, count) }
    }

    /// write(2) of `bytes`: the bytes written, which may be fewer than given.
    package static func write(_ fd: Int32, _ bytes: [UInt8], path: String? = nil) throws(SystemCallError) -> Int {
        try systemCall(named("write", path)) { Glibc.write(fd, bytes, bytes.count) }
    }

    /// write(2): the bytes written, which may be fewer than given.
    package static func write(_ fd: Int32, from buffer: UnsafeRawBufferPointer, path: String? = nil) throws(SystemCallError) -> Int {
        try systemCall(named("write", path)) { Glibc.write(fd, buffer.baseAddress, buffer.count) }
    }

    /// pread(2) at `offset`: the bytes read, 0 at the end of the file.
    static func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String? = nil) throws(SystemCallError) -> Int {
        try systemCall(named("pread", path)) { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// pread(2) into the whole of `bytes` at `offset`: the bytes read, 0 at the end of the file.
    static func pread(_ fd: Int32, into bytes: inout [UInt8], at offset: Int64, path: String? = nil) throws(SystemCallError) -> Int {
        let count = bytes.count
        return try systemCall(named("pread", path)) { Glibc.pread(fd, &bytes, count, off_t(offset)) }
    }

    /// pwrite(2) of `bytes` at `offset`: the bytes written, which may be fewer than given.
    static func pwrite(_ fd: Int32, _ bytes: [UInt8], at offset: Int64, path: String? = nil) throws(SystemCallError) -> Int {
        try systemCall(named("pwrite", path)) { Glibc.pwrite(fd, bytes, bytes.count, off_t(offset)) }
    }

    /// pwrite(2) at `offset`: the bytes written, which may be fewer than given.
    static func pwrite(_ fd: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64, path: String? = nil) throws(SystemCallError) -> Int {
        try systemCall(named("pwrite", path)) { Glibc.pwrite(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// lseek(2): the new offset.
    static func lseek(_ fd: Int32, _ offset: Int64, _ whence: Int32, path: String? = nil) throws(SystemCallError) -> Int64 {
        let position = try systemCall(named("lseek", path)) { Int(Glibc.lseek(fd, off_t(offset), whence)) }
        return Int64(position)
    }

    /// ftruncate(2): cuts the file to `length` bytes (or extends it with zeros).
    static func ftruncate(_ fd: Int32, _ length: Int64, path: String? = nil) throws(SystemCallError) {
        try systemCall(named("ftruncate", path)) { Glibc.ftruncate(fd, off_t(length)) }
    }

    /// fsync(2): what was written reaches stable storage.
    package static func fsync(_ fd: Int32, path: String? = nil) throws(SystemCallError) {
        try systemCall(named("fsync", path)) { Glibc.fsync(fd) }
    }

    /// fchmod(2): the file's permission bits.
    static func fchmod(_ fd: Int32, _ mode: mode_t, path: String? = nil) throws(SystemCallError) {
        try systemCall(named("fchmod", path)) { Glibc.fchmod(fd, mode) }
    }

    /// flock(2); with LOCK_NB, a lock held elsewhere fails with EWOULDBLOCK.
    static func flock(_ fd: Int32, _ operation: Int32, path: String? = nil) throws(SystemCallError) {
        try systemCall(named("flock", path)) { cFlock(fd, operation) }
    }

    /// fcntl(2) with an integer argument (F_GETFL, F_SETFL, F_SETFD …).
    @discardableResult
    static func fcntl(_ fd: Int32, _ command: Int32, _ argument: Int32 = 0) throws(SystemCallError) -> Int32 {
        try systemCall("fcntl") { Glibc.fcntl(fd, command, argument) }
    }

    /// pipe(2), both ends close-on-exec and non-blocking.
    package static func nonBlockingPipe() throws(SystemCallError) -> (readEnd: Int32, writeEnd: Int32) {
        var ends: [Int32] = [-1, -1]
        try systemCall("pipe") { Glibc.pipe(&ends) }
        do {
            for end in ends {
                try fcntl(end, F_SETFD, FD_CLOEXEC)
                try fcntl(end, F_SETFL, try fcntl(end, F_GETFL) | O_NONBLOCK)
            }
        } catch {
            for end in ends { try? close(end) }
            throw error
        }
        return (ends[0], ends[1])
    }

    /// ioctl(2) with the one pointer argument every V4L2 and media request
    /// takes; `request` names it in errors (`VIDIOC_QBUF`).
    @discardableResult
    static func ioctl(_ fd: Int32, _ request: String, _ number: UInt, _ argument: UnsafeMutableRawPointer) throws(SystemCallError) -> Int32 {
        // cv4l2_ioctl: ioctl(2) is variadic, which Swift cannot call.
        try systemCall("ioctl(\(request))") { cv4l2_ioctl(fd, number, argument) }
    }

    /// poll(2): how many entries have events. Retried after EINTR with the
    /// whole timeout again, so a loop woken by a signal simply waits on.
    @discardableResult
    package static func poll(_ entries: inout [pollfd], timeout milliseconds: Int32) throws(SystemCallError) -> Int {
        let count = nfds_t(entries.count)
        return Int(try systemCall("poll") { Glibc.poll(&entries, count, milliseconds) })
    }

    // MARK: Memory

    /// mmap(2) of a shared mapping of `fd`.
    static func mmap(length: Int, protection: Int32, flags: Int32, fd: Int32, offset: Int64) throws(SystemCallError) -> UnsafeMutableRawPointer {
        try systemCall("mmap") { () -> UnsafeMutableRawPointer? in
            let address = Glibc.mmap(nil, length, protection, flags, fd, off_t(offset))
            return address == MAP_FAILED ? nil : address
        }
    }

    /// munmap(2) of a mapping `mmap` made.
    static func munmap(_ address: UnsafeMutableRawPointer, length: Int) throws(SystemCallError) {
        try systemCall("munmap") { Glibc.munmap(address, length) }
    }

    // MARK: Paths

    /// stat(2): what `path` names, links followed.
    package static func stat(_ path: String) throws(SystemCallError) -> Glibc.stat {
        var info = Glibc.stat()
        try systemCall("stat(\(path))") { cStat(path, &info) }
        return info
    }

    /// lstat(2): the link itself, not what it points to.
    package static func lstat(_ path: String) throws(SystemCallError) -> Glibc.stat {
        var info = Glibc.stat()
        try systemCall("lstat(\(path))") { Glibc.lstat(path, &info) }
        return info
    }

    /// fstat(2): the open file's type, size, device and inode.
    package static func fstat(_ fd: Int32, path: String? = nil) throws(SystemCallError) -> Glibc.stat {
        var info = Glibc.stat()
        try systemCall(named("fstat", path)) { Glibc.fstat(fd, &info) }
        return info
    }

    /// statvfs(3): the file system holding `path` (its free blocks, block size …).
    static func statvfs(_ path: String) throws(SystemCallError) -> Glibc.statvfs {
        var info = Glibc.statvfs()
        try systemCall("statvfs(\(path))") { cStatvfs(path, &info) }
        return info
    }

    /// access(2) with `mode` (F_OK, R_OK | W_OK …), judged with the real user and group IDs.
    package static func access(_ path: String, _ mode: Int32) throws(SystemCallError) {
        try systemCall("access(\(path))") { Glibc.access(path, mode) }
    }

    /// Whether access(2) allows `mode` on `path` (by default: whether it exists).
    package static func isAccessible(_ path: String, _ mode: Int32 = F_OK) -> Bool {
        (try? access(path, mode)) != nil
    }

    /// unlink(2): removes the name `path` (a link itself, never what it points to).
    package static func unlink(_ path: String) throws(SystemCallError) {
        try systemCall("unlink(\(path))") { Glibc.unlink(path) }
    }

    /// fchown(2): gives the open file `fd` this owner and group.
    package static func fchown(_ fd: Int32, owner: uid_t, group: gid_t, path: String? = nil) throws(SystemCallError) {
        try systemCall(named("fchown", path)) { Glibc.fchown(fd, owner, group) }
    }

    /// rename(2): gives `path` the name `newPath`, replacing what had it, in one step.
    package static func rename(_ path: String, to newPath: String) throws(SystemCallError) {
        try systemCall("rename(\(path), \(newPath))") { Glibc.rename(path, newPath) }
    }

    /// readlink(2): where a symbolic link points, as written in it.
    package static func readlink(_ path: String) throws(SystemCallError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let capacity = buffer.count - 1
        let count = try systemCall("readlink(\(path))") { Glibc.readlink(path, &buffer, capacity) }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// realpath(3): the canonical absolute path, links resolved.
    package static func realpath(_ path: String) throws(SystemCallError) -> String {
        let resolved = try systemCall("realpath(\(path))") { Glibc.realpath(path, nil) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The start of a small file (a sysfs attribute, a lock file): up to
    /// `limit` bytes, read until the end of the file.
    static func readFile(_ path: String, limit: Int) throws(SystemCallError) -> [UInt8] {
        let fd = try open(path, O_RDONLY | O_CLOEXEC)
        defer { try? close(fd, path: path) }
        return try read(fd, upTo: limit, path: path)
    }

    /// Reads from `fd` until the end of the file or `limit` bytes.
    package static func read(_ fd: Int32, upTo limit: Int, path: String? = nil) throws(SystemCallError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(max(limit, 0), 4096))
        while bytes.count < limit {
            let count = try read(fd, into: &chunk, path: path)
            if count == 0 { break }
            bytes += chunk.prefix(min(count, limit - bytes.count))
        }
        return bytes
    }

    /// execv(3): replaces this process with the program at `path`, given
    /// `arguments` (its own name first). Returns only if that failed, with why.
    package static func execute(_ path: String, arguments: [String]) -> SystemCallError {
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        Glibc.execv(path, argv)
        return SystemCallError(call: "execv(\(path))", errno: errno)
    }

    /// The names in a directory (opendir/readdir), "." and ".." left out.
    package static func directoryEntries(_ path: String) throws(SystemCallError) -> [String] {
        let directory = try systemCall("opendir(\(path))") { opendir(path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    // MARK: Notifications

    /// inotify_init1(2): a descriptor inotify events are read from.
    static func inotifyInit(flags: Int32) throws(SystemCallError) -> Int32 {
        try systemCall("inotify_init1") { inotify_init1(flags) }
    }

    /// inotify_add_watch(2): the watch descriptor events for `path` carry.
    static func inotifyAddWatch(_ fd: Int32, _ path: String, mask: UInt32) throws(SystemCallError) -> Int32 {
        try systemCall("inotify_add_watch(\(path))") { inotify_add_watch(fd, path, mask) }
    }

    // MARK: Time

    /// Sleeps for `nanoseconds` (nanosleep(2)); a signal does not cut it
    /// short: the time left is slept after EINTR.
    static func sleep(nanoseconds: Int64) {
        var wanted = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var left = timespec()
        _ = try? systemCall("nanosleep") { () -> Int32 in
            let result = nanosleep(&wanted, &left)
            // The runner calls again after EINTR: with the time left, not the whole time.
            if result == -1, Glibc.errno == EINTR { wanted = left }
            return result
        }
    }

    // MARK: Identity

    /// getgroups(2): the supplementary groups of this process.
    static func supplementaryGroups() throws(SystemCallError) -> [gid_t] {
        let count = try systemCall("getgroups") { getgroups(0, nil) }
        guard count > 0 else { return [] }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let filled = try systemCall("getgroups") { getgroups(count, &groups) }
        return Array(groups.prefix(Int(filled)))
    }
}

// flock, stat and statvfs name both a struct and a function in Glibc; inside
// `Posix`, whose own functions share the names, only these file-level
// forwarders reach the C functions.
private func cFlock(_ fd: Int32, _ operation: Int32) -> Int32 { flock(fd, operation) }
private func cStat(_ path: String, _ info: inout stat) -> Int32 { stat(path, &info) }
private func cStatvfs(_ path: String, _ info: inout statvfs) -> Int32 { statvfs(path, &info) }
