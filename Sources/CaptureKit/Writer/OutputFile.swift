import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// The file an `AssetWriter` writes: created new with O_EXCL (so an existing
/// file is never truncated) and O_NOFOLLOW (so a symbolic link placed at the
/// path is never followed), and written only through its own descriptor.
/// libavformat writes through an AVIOContext whose callbacks use that
/// descriptor; nothing reopens the file by name. Removal checks that the
/// path still names the file that was created.
final class OutputFile {
    let path: String
    private(set) var descriptor: Int32
    private let device: UInt64
    private let inode: UInt64

    /// Creates the file, failing if anything exists at `path`.
    init(creating path: String) throws(WriterError) {
        self.path = path
        let fd: Int32
        do {
            fd = try systemCall("open(\(path))") {
                open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            }
        } catch {
            switch error.errno {
            case EEXIST, ELOOP: throw .outputExists(path: path)
            case ENOENT, ENOTDIR: throw .directoryMissing(path: path)
            case EACCES, EPERM, EROFS: throw .notWritable(path: path, error: error)
            default: throw .cannotCreate(path: path, error: error)
            }
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw .cannotCreate(path: path, error: SystemCallError(call: "fstat(\(path))", errno: code))
        }
        descriptor = fd
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        // While it is written, the file is locked: `MovieRepair` (capctl
        // repair) refuses to rewrite a file a recording still writes. An
        // advisory lock, released when the descriptor closes, or the process
        // dies.
        _ = flock(fd, LOCK_EX | LOCK_NB)
    }

    /// Opens an existing regular file to rewrite in place, taking the lock a
    /// writer holds while it writes: `isBusy` when another process holds it.
    init(openingExisting path: String) throws(ExistingFileError) {
        self.path = path
        let fd: Int32
        do {
            fd = try systemCall("open(\(path))") { open(path, O_RDWR | O_CLOEXEC) }
        } catch {
            throw .open(error)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .notAFile
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw .isBusy }
            throw .open(SystemCallError(call: "flock(\(path))", errno: code))
        }
        descriptor = fd
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// Why an existing file could not be opened for rewriting.
    enum ExistingFileError: Error {
        case open(SystemCallError)
        case notAFile
        case isBusy
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    var isOpen: Bool { descriptor >= 0 }

    /// Flushes to stable storage and closes the descriptor.
    func syncAndClose() throws(SystemCallError) {
        guard descriptor >= 0 else { return }
        let fd = descriptor
        descriptor = -1
        defer { close(fd) }
        try systemCall("fsync(\(path))") { fsync(fd) }
    }

    /// Flushes what was written to stable storage; the file stays open.
    func sync() throws(SystemCallError) {
        try systemCall("fsync(\(path))") { fsync(descriptor) }
    }

    func closeQuietly() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    /// Removes the file, if the path still names the file this object
    /// created (and not something put there since).
    func remove() {
        var info = stat()
        if lstat(path, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode {
            unlink(path)
        }
        closeQuietly()
    }

    // MARK: Positioned I/O for rewriting boxes after the muxer is done

    func size() throws(SystemCallError) -> Int64 {
        var info = stat()
        try systemCall("fstat(\(path))") { fstat(descriptor, &info) }
        return Int64(info.st_size)
    }

    func read(at offset: Int64, count: Int) throws(SystemCallError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let fd = descriptor
        let failure: Int32 = bytes.withUnsafeMutableBytes { raw in
            var done = 0
            while done < count {
                let got = pread(fd, raw.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if got < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if got == 0 { return EIO }
                done += got
            }
            return 0
        }
        if failure != 0 { throw SystemCallError(call: "pread(\(path))", errno: failure) }
        return bytes
    }

    func write(_ bytes: [UInt8], at offset: Int64) throws(SystemCallError) {
        let fd = descriptor
        let failure: Int32 = bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let wrote = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
                if wrote < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += wrote
            }
            return 0
        }
        if failure != 0 { throw SystemCallError(call: "pwrite(\(path))", errno: failure) }
    }

    func truncate(to length: Int64) throws(SystemCallError) {
        try systemCall("ftruncate(\(path))") { ftruncate(descriptor, off_t(length)) }
    }
}

/// An AVIOContext that writes to an `OutputFile`'s descriptor, with seeking
/// (the MP4 muxer goes back to fill in box sizes). Owns the context and its
/// buffer.
final class FileWriteContext {
    let context: UnsafeMutablePointer<AVIOContext>
    private let box: Unmanaged<Target>

    /// What the C callbacks see through their opaque pointer.
    final class Target {
        let descriptor: Int32
        /// The first write error, kept so the writer can report errno's text.
        var error: SystemCallError?
        let path: String
        /// Where the descriptor's offset is, and the furthest byte written:
        /// the file's size, known without asking the kernel.
        var position: Int64 = 0
        var extent: Int64 = 0
        init(descriptor: Int32, path: String) {
            self.descriptor = descriptor
            self.path = path
        }
    }

    /// With `writingBlocksThrough`, a block libavformat writes in one call
    /// (a whole fragment's media data, which the muxer keeps in memory until
    /// the fragment is complete) goes to the file without being copied into
    /// the context's buffer first; small writes are still gathered there.
    init(file: OutputFile, writingBlocksThrough: Bool = false) throws(FFmpegError) {
        let target = Target(descriptor: file.descriptor, path: file.path)
        let size: Int32 = 1 << 16
        guard let buffer = av_malloc(Int(size)) else {
            throw FFmpegError(call: "av_malloc", code: cffmpeg_averror(ENOMEM))
        }
        let retained = Unmanaged.passRetained(target)
        guard let context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), size, 1, retained.toOpaque(), nil, fileWritePacket, fileSeek) else {
            av_free(buffer)
            retained.release()
            throw FFmpegError(call: "avio_alloc_context", code: cffmpeg_averror(ENOMEM))
        }
        context.pointee.direct = writingBlocksThrough ? 1 : 0
        self.context = context
        self.box = retained
    }

    /// The first error a write or seek met, if any.
    var ioError: SystemCallError? { box.takeUnretainedValue().error }

    /// How many bytes the file holds so far (what the callbacks wrote; the
    /// file is new, so nothing was there before).
    var extent: Int64 { box.takeUnretainedValue().extent }

    deinit {
        var pointer: UnsafeMutablePointer<AVIOContext>? = context
        av_freep(&pointer!.pointee.buffer)
        avio_context_free(&pointer)
        box.release()
    }
}

private func fileWritePacket(_ opaque: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
    guard let opaque, let buffer else { return cffmpeg_averror(EINVAL) }
    let target = Unmanaged<FileWriteContext.Target>.fromOpaque(opaque).takeUnretainedValue()
    var done = 0
    while done < Int(size) {
        let wrote = write(target.descriptor, buffer + done, Int(size) - done)
        if wrote < 0 {
            let code = errno
            if code == EINTR { continue }
            if target.error == nil { target.error = SystemCallError(call: "write(\(target.path))", errno: code) }
            return cffmpeg_averror(code)
        }
        done += wrote
        target.position += Int64(wrote)
        target.extent = max(target.extent, target.position)
    }
    return size
}

private func fileSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    guard let opaque else { return Int64(cffmpeg_averror(EINVAL)) }
    let target = Unmanaged<FileWriteContext.Target>.fromOpaque(opaque).takeUnretainedValue()
    if whence & AVSEEK_SIZE != 0 {
        var info = stat()
        if fstat(target.descriptor, &info) != 0 { return Int64(cffmpeg_averror(errno)) }
        return Int64(info.st_size)
    }
    let position = lseek(target.descriptor, off_t(offset), whence & ~AVSEEK_FORCE)
    if position < 0 {
        let code = errno
        if target.error == nil { target.error = SystemCallError(call: "lseek(\(target.path))", errno: code) }
        return Int64(cffmpeg_averror(code))
    }
    target.position = Int64(position)
    return Int64(position)
}
