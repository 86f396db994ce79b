#if canImport(Glibc)
import Glibc
#endif

/// System-call mocking for tests, after swift-system's MockingDriver. While
/// `withMocking` runs its body, every call that body makes through the
/// checked wrapper (`systemCall`, `negatedErrnoCall`, `Posix`) on this thread
/// is recorded in `trace` by name, and `forcedErrno` makes calls fail with an
/// errno before they reach the kernel; calls not forced run for real. Other
/// threads are untouched, so tests running side by side do not see each
/// other's failures. Without mocking, a call costs one thread-local read more.
final class SystemCallMocking {
    /// Which calls fail, and how often.
    enum ForcedErrno: Equatable {
        case none
        /// Every matching call fails with `errno`.
        case always(errno: Int32)
        /// The next `count` matching calls fail with `errno`; then calls run for real.
        case counted(errno: Int32, count: Int)
    }

    /// The name of every call made, in order; a call retried after EINTR appears once per attempt.
    private(set) var trace: [String] = []
    var forcedErrno = ForcedErrno.none
    /// Only calls whose name starts with this (`ioctl(VIDIOC_DQBUF)`, `read(`)
    /// are forced to fail; nil forces any.
    var forcedCallPrefix: String?

    private init() {}

    /// Runs `body` with a fresh driver for this thread, then restores the one before (mocking nests).
    static func withMocking<T, E: Error>(_ body: (SystemCallMocking) throws(E) -> T) throws(E) -> T {
        let driver = SystemCallMocking()
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(driver).toOpaque())
        defer {
            pthread_setspecific(key, previous)
            withExtendedLifetime(driver) {}
        }
        return try body(driver)
    }

    /// Turns mocking on for the rest of this thread's life, with a fresh
    /// driver: for a thread the test does not run itself, reached through a
    /// callback on it (a recording's writing thread, through its sample
    /// handler), where the calls to fail come after the callback returns.
    /// The thread holds the driver unretained: the caller keeps it until the
    /// thread has ended (joined).
    static func beginOnThisThread() -> SystemCallMocking {
        let driver = SystemCallMocking()
        pthread_setspecific(key, Unmanaged.passUnretained(driver).toOpaque())
        return driver
    }

    /// The driver of this thread, if mocking is on.
    static var current: SystemCallMocking? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<SystemCallMocking>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Records a call about to be made; answers the errno it is forced to
    /// fail with, or nil to let it run.
    static func intercept(_ name: () -> String) -> Int32? {
        guard let driver = current else { return nil }
        let call = name()
        driver.trace.append(call)
        if let prefix = driver.forcedCallPrefix, !call.hasPrefix(prefix) { return nil }
        switch driver.forcedErrno {
        case .none:
            return nil
        case .always(let code):
            return code
        case .counted(let code, let count):
            driver.forcedErrno = count > 1 ? .counted(errno: code, count: count - 1) : .none
            return code
        }
    }

    /// The thread-local slot; made once, never deleted.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}
