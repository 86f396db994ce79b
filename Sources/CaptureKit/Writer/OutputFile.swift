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
            fd = try Posix.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode: 0o644)
        } catch {
            switch error.errno {
            case EEXIST, ELOOP: throw .outputExists(path: path)
            case ENOENT, ENOTDIR: throw .directoryMissing(path: path)
            case EACCES, EPERM, EROFS: throw .notWritable(path: path, error: error)
            default: throw .cannotCreate(path: path, error: error)
            }
        }
        let info: Glibc.stat
        do {
            info = try Posix.fstat(fd, path: path)
        } catch {
            try? Posix.close(fd, path: path)
            throw .cannotCreate(path: path, error: error)
        }
        descriptor = fd
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        // While it is written, the file is locked: `MovieRepair` (capctl
        // repair) refuses to rewrite a file a recording still writes. An
        // advisory lock, released when the descriptor closes, or the process
        // dies.
        try? Posix.flock(fd, LOCK_EX | LOCK_NB, path: path)
    }

    /// Opens an existing regular file to rewrite in place, taking the lock a
    /// writer holds while it writes: `isBusy` when another process holds it.
    init(openingExisting path: String) throws(ExistingFileError) {
        self.path = path
        let fd: Int32
        do {
            fd = try Posix.open(path, O_RDWR | O_CLOEXEC)
        } catch {
            throw .open(error)
        }
        guard let info = try? Posix.fstat(fd, path: path), (info.st_mode & S_IFMT) == S_IFREG else {
            try? Posix.close(fd, path: path)
            throw .notAFile
        }
        do {
            try Posix.flock(fd, LOCK_EX | LOCK_NB, path: path)
        } catch {
            try? Posix.close(fd, path: path)
            if error.errno == EWOULDBLOCK { throw .isBusy }
            throw .open(error)
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
        if descriptor >= 0 { try? Posix.close(descriptor, path: path) }
    }

    var isOpen: Bool { descriptor >= 0 }

    /// Flushes to stable storage and closes the descriptor.
    func syncAndClose() throws(SystemCallError) {
        guard descriptor >= 0 else { return }
        let fd = descriptor
        descriptor = -1
        defer { try? Posix.close(fd, path: path) }
        try Posix.fsync(fd, path: path)
    }

    /// Flushes what was written to stable storage; the file stays open.
    func sync() throws(SystemCallError) {
        try Posix.fsync(descriptor, path: path)
    }

    func closeQuietly() {
        if descriptor >= 0 { try? Posix.close(descriptor, path: path) }
        descriptor = -1
    }

    /// Removes the file, if the path still names the file this object
    /// created (and not something put there since).
    func remove() {
        if let info = try? Posix.lstat(path), UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode {
            try? Posix.unlink(path)
        }
        closeQuietly()
    }

    // MARK: Positioned I/O for rewriting boxes after the muxer is done

    func size() throws(SystemCallError) -> Int64 {
        Int64(try Posix.fstat(descriptor, path: path).st_size)
    }

    func read(at offset: Int64, count: Int) throws(SystemCallError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let fd = descriptor
        let failure: SystemCallError? = bytes.withUnsafeMutableBytes { raw in
            var done = 0
            while done < count {
                do throws(SystemCallError) {
                    let got = try Posix.pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[done...]),
                                              at: offset + Int64(done), path: path)
                    if got == 0 { return SystemCallError(call: "pread(\(path))", errno: EIO) }
                    done += got
                } catch {
                    return error
                }
            }
            return nil
        }
        if let failure { throw failure }
        return bytes
    }

    func write(_ bytes: [UInt8], at offset: Int64) throws(SystemCallError) {
        let fd = descriptor
        let failure: SystemCallError? = bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                do throws(SystemCallError) {
                    done += try Posix.pwrite(fd, from: UnsafeRawBufferPointer(rebasing: raw[done...]),
                                             at: offset + Int64(done), path: path)
                } catch {
                    return error
                }
            }
            return nil
        }
        if let failure { throw failure }
    }

    func truncate(to length: Int64) throws(SystemCallError) {
        try Posix.ftruncate(descriptor, length, path: path)
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
        let wrote: Int
        do {
            wrote = try Posix.write(target.descriptor, from: UnsafeRawBufferPointer(start: buffer + done, count: Int(size) - done),
                                    path: target.path)
        } catch {
            if target.error == nil { target.error = error }
            return cffmpeg_averror(error.errno)
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
        do {
            return Int64(try Posix.fstat(target.descriptor, path: target.path).st_size)
        } catch {
            return Int64(cffmpeg_averror(error.errno))
        }
    }
    let position: Int64
    do {
        position = try Posix.lseek(target.descriptor, offset, whence & ~AVSEEK_FORCE, path: target.path)
    } catch {
        if target.error == nil { target.error = error }
        return Int64(cffmpeg_averror(error.errno))
    }
    target.position = position
    return position
}
