#if canImport(Glibc)
import Glibc
#endif

/// Who holds a device's configuration lock, as far as can be told.
public struct ConfigurationLockHolder: Sendable, Hashable, CustomStringConvertible {
    /// The holder's process ID, when known.
    public let processID: Int32?
    /// Its command name (`capctl`, `guvcview` …), when known.
    public let command: String?
    /// Whether the holder is a capctl-style advisory lock (true), or a
    /// program that raised the V4L2 priority without one (false).
    public let viaAdvisoryLock: Bool

    public init(processID: Int32?, command: String?, viaAdvisoryLock: Bool) {
        self.processID = processID
        self.command = command
        self.viaAdvisoryLock = viaAdvisoryLock
    }

    public var description: String {
        switch (processID, command) {
        case (let pid?, let command?): return "process \(pid) (\(command))"
        case (let pid?, nil): return "process \(pid)"
        case (nil, let command?): return "another process (\(command))"
        case (nil, nil): return "another process"
        }
    }
}

/// The configuration lock of one device: the counterpart of
/// lockForConfiguration/unlockForConfiguration. While it is held, other
/// processes cannot change the device's controls or format:
///
/// - the V4L2 priority of the holder's file handle is raised to RECORD, so the
///   driver refuses (EBUSY) changes through every other file handle, whatever
///   program makes them;
/// - an advisory lock (flock) on a lock file named for the device records the
///   holder's process ID, so a refusal can name it, and capctl processes see
///   the lock even on drivers that ignore priorities.
///
/// Changes must go through the node the lock was taken on. The lock is
/// released by `release()`, when the object goes away, or when the process ends.
final class ConfigurationLock {
    let devicePath: String
    /// The advisory lock file.
    let lockFilePath: String
    /// Whether the driver enforces the lock through V4L2 priorities; when
    /// false, only processes that take the advisory lock are kept out.
    let isEnforcedByDriver: Bool

    private let node: (any V4L2ControlNode)?
    private var lockDescriptor: Int32
    private(set) var isHeld = true

    private init(devicePath: String, lockFilePath: String, isEnforcedByDriver: Bool, node: (any V4L2ControlNode)?, lockDescriptor: Int32) {
        self.devicePath = devicePath
        self.lockFilePath = lockFilePath
        self.isEnforcedByDriver = isEnforcedByDriver
        self.node = node
        self.lockDescriptor = lockDescriptor
    }

    deinit {
        release()
    }

    /// Takes the lock on `node`, an open file handle of `devicePath`. Refused
    /// with `.locked`, naming the holder, while another process holds it.
    /// - Parameters:
    ///   - directory: where lock files live; by default the first writable of
    ///     /run/lock and /tmp (the same for every process on the system).
    ///   - procRoot: where to look for the processes that have the device open
    ///     when a program holds the priority without the advisory lock.
    static func acquire(node: any V4L2ControlNode, devicePath: String, directory: String? = nil,
                               procRoot: String = "/proc") throws(ControlError) -> ConfigurationLock {
        let (lockFilePath, descriptor) = try takeAdvisoryLock(devicePath: devicePath, directory: directory)
        var enforced = true
        do {
            try node.setPriority(.record)
        } catch where error.errno == EBUSY {
            try? Posix.close(descriptor)
            throw .locked(device: devicePath, holder: priorityHolder(devicePath: devicePath, procRoot: procRoot))
        } catch where error.errno == ENOTTY || error.errno == EINVAL {
            // The driver does not implement priorities: the advisory lock is all there is.
            enforced = false
        } catch {
            try? Posix.close(descriptor)
            throw .requestFailed(device: devicePath, control: "", error)
        }
        writeHolder(descriptor: descriptor)
        return ConfigurationLock(devicePath: devicePath, lockFilePath: lockFilePath, isEnforcedByDriver: enforced,
                                 node: node, lockDescriptor: descriptor)
    }

    /// Takes only the advisory lock of `devicePath`, for a process that
    /// raises the V4L2 priority on a handle of its own (a capture stream
    /// must: with the priority on another handle, its own STREAMON would be
    /// refused). Refused with `.locked`, naming the holder.
    static func acquireAdvisory(devicePath: String, directory: String? = nil) throws(ControlError) -> ConfigurationLock {
        let (lockFilePath, descriptor) = try takeAdvisoryLock(devicePath: devicePath, directory: directory)
        writeHolder(descriptor: descriptor)
        return ConfigurationLock(devicePath: devicePath, lockFilePath: lockFilePath, isEnforcedByDriver: false,
                                 node: nil, lockDescriptor: descriptor)
    }

    /// Opens the lock file of `devicePath` and takes its flock without
    /// waiting; refused with `.locked`, naming the holder written in it.
    private static func takeAdvisoryLock(devicePath: String, directory: String?) throws(ControlError) -> (path: String, descriptor: Int32) {
        let lockDirectory = directory ?? defaultDirectory()
        let lockFilePath = "\(lockDirectory)/\(lockFileName(for: devicePath))"
        let descriptor = try openLockFile(lockFilePath, device: devicePath)
        do {
            try Posix.flock(descriptor, LOCK_EX | LOCK_NB, path: lockFilePath)
        } catch {
            let holder = readHolder(descriptor: descriptor)
            try? Posix.close(descriptor)
            if error.errno == EWOULDBLOCK { throw .locked(device: devicePath, holder: holder) }
            throw .requestFailed(device: devicePath, control: "", error)
        }
        return (lockFilePath, descriptor)
    }

    /// Lowers the priority and drops the advisory lock. Harmless when already released.
    func release() {
        guard isHeld else { return }
        isHeld = false
        if isEnforcedByDriver { try? node?.setPriority(.interactive) }
        try? Posix.ftruncate(lockDescriptor, 0)
        try? Posix.flock(lockDescriptor, LOCK_UN)
        try? Posix.close(lockDescriptor)
        lockDescriptor = -1
    }

    /// Who holds the lock of `devicePath` now, or nil when nobody holds its
    /// advisory lock. Does not take the lock.
    static func currentHolder(of devicePath: String, directory: String? = nil) -> ConfigurationLockHolder? {
        let path = "\(directory ?? defaultDirectory())/\(lockFileName(for: devicePath))"
        guard let descriptor = try? Posix.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { try? Posix.close(descriptor) }
        if (try? Posix.flock(descriptor, LOCK_SH | LOCK_NB)) != nil {
            try? Posix.flock(descriptor, LOCK_UN)
            return nil
        }
        return readHolder(descriptor: descriptor)
    }

    // MARK: Lock files

    /// The first of /run/lock and /tmp this process can write to. Every
    /// process on a system comes to the same answer, which is what matters.
    static func defaultDirectory() -> String {
        for candidate in ["/run/lock", "/tmp"] where Posix.isAccessible(candidate, W_OK | X_OK) {
            return candidate
        }
        return "/tmp"
    }

    /// `capctl-config-c81-0.lock` for the character device 81:0, so that every
    /// path to the node (links included) shares one lock; a name made from
    /// the path where the node cannot be examined.
    static func lockFileName(for devicePath: String) -> String {
        if let info = try? Posix.stat(devicePath), info.st_mode & S_IFMT == S_IFCHR {
            let device = UInt64(info.st_rdev)
            // major(3) and minor(3) are macros: their glibc encoding.
            let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
            let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
            return "capctl-config-c\(major)-\(minor).lock"
        }
        let safe = devicePath.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" }
        return "capctl-config-\(String(safe)).lock"
    }

    private static func openLockFile(_ path: String, device: String) throws(ControlError) -> Int32 {
        // Open an existing file without O_CREAT: in a sticky directory such as
        // /tmp, O_CREAT on another user's file is refused (protected_regular).
        do {
            return try Posix.open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        } catch where error.errno == EACCES {
            // Another user's lock file we may not write: locking needs only reading.
            if let readOnly = try? Posix.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) { return readOnly }
        } catch {}
        do {
            let created = try Posix.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode: 0o666)
            // Any user must be able to take the lock later: not the umask's mode.
            try? Posix.fchmod(created, 0o666, path: path)
            return created
        } catch where error.errno == EEXIST {
            // Created by another process in the meantime.
            do {
                return try Posix.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            } catch {
                throw .requestFailed(device: device, control: "", error)
            }
        } catch {
            throw .requestFailed(device: device, control: "", error)
        }
    }

    /// Records "PID COMMAND" in the lock file.
    private static func writeHolder(descriptor: Int32) {
        let text = "\(getpid()) \(commandName(of: getpid(), procRoot: "/proc") ?? "")\n"
        try? Posix.ftruncate(descriptor, 0)
        _ = try? Posix.pwrite(descriptor, Array(text.utf8), at: 0)
    }

    private static func readHolder(descriptor: Int32) -> ConfigurationLockHolder {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = (try? Posix.pread(descriptor, into: &buffer, at: 0)) ?? 0
        guard count > 0 else { return ConfigurationLockHolder(processID: nil, command: nil, viaAdvisoryLock: true) }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self)
        let line = text.split(separator: "\n").first ?? ""
        let parts = line.split(separator: " ", maxSplits: 1)
        let pid = parts.first.flatMap { Int32($0) }
        let command = parts.count > 1 ? String(parts[1]) : nil
        return ConfigurationLockHolder(processID: pid, command: command, viaAdvisoryLock: true)
    }

    /// A program holds the V4L2 priority without the advisory lock: the
    /// processes that have the node open are the candidates.
    static func priorityHolder(devicePath: String, procRoot: String) -> ConfigurationLockHolder {
        let others = processesWithOpen(devicePath, procRoot: procRoot).filter { $0 != getpid() }
        if others.count == 1, let pid = others.first {
            return ConfigurationLockHolder(processID: pid, command: commandName(of: pid, procRoot: procRoot), viaAdvisoryLock: false)
        }
        let list = others.prefix(5).map { pid in "\(pid)" + (commandName(of: pid, procRoot: procRoot).map { " \($0)" } ?? "") }
        let command = list.isEmpty ? "a program holding the V4L2 priority" : "one of the processes with it open: \(list.joined(separator: ", "))"
        return ConfigurationLockHolder(processID: nil, command: command, viaAdvisoryLock: false)
    }

    /// Process IDs under `procRoot` with a descriptor open on `devicePath`.
    static func processesWithOpen(_ devicePath: String, procRoot: String) -> [Int32] {
        guard let target = resolvedPath(devicePath), let processes = try? Posix.directoryEntries(procRoot) else { return [] }
        var found: [Int32] = []
        for name in processes {
            guard let pid = Int32(name) else { continue }
            let fdDirectory = "\(procRoot)/\(name)/fd"
            guard let descriptors = try? Posix.directoryEntries(fdDirectory) else { continue }
            let opened = descriptors.contains { fdName in
                Int32(fdName) != nil && (try? Posix.readlink("\(fdDirectory)/\(fdName)")) == target
            }
            if opened { found.append(pid) }
        }
        return found.sorted()
    }

    static func commandName(of pid: Int32, procRoot: String) -> String? {
        guard let bytes = try? Posix.readFile("\(procRoot)/\(pid)/comm", limit: 64) else { return nil }
        let text = String(decoding: bytes.prefix { $0 != 0 && $0 != 10 }, as: UTF8.self)
        return text.isEmpty ? nil : text
    }
}
