#if canImport(Glibc)
import Glibc
#endif

// The one checked way CaptureKit makes system calls (and the library calls
// that are thin layers over them: libv4l2, alsa-lib's PCM reads). Each runner
// below retries a call a signal interrupted (EINTR), keeps the errno of one
// that failed, and throws it with the call's name, such as
// `ioctl(VIDIOC_DQBUF)` or `open(/dev/video0)`. Each consults
// `SystemCallMocking` first, so tests can make any call fail and see which
// calls were made. `Posix` holds the calls themselves.

/// Runs a system call that returns -1 on failure (errno says why), retrying
/// while a signal interrupts it, and throws an error naming the call
/// otherwise. Answers the call's result.
@discardableResult
func systemCall(_ name: @autoclosure () -> String, _ body: () -> Int32) throws(SystemCallError) -> Int32 {
    try checkedCall(name, retryingInterrupts: true, failed: { $0 == -1 }, errno: { _ in Glibc.errno }, body)
}

/// `systemCall` for calls that answer a byte count (`ssize_t`): read, write, pread …
@discardableResult
func systemCall(_ name: @autoclosure () -> String, _ body: () -> Int) throws(SystemCallError) -> Int {
    try checkedCall(name, retryingInterrupts: true, failed: { $0 == -1 }, errno: { _ in Glibc.errno }, body)
}

/// `systemCall` for calls that answer an address, NULL (or for mmap
/// MAP_FAILED) on failure: mmap, opendir, realpath.
func systemCall<Pointee>(_ name: @autoclosure () -> String, _ body: () -> Pointee?) throws(SystemCallError) -> Pointee {
    let result = try checkedCall(name, retryingInterrupts: true, failed: { $0 == nil }, errno: { _ in Glibc.errno }, body)
    // `failed` let no nil through.
    guard let result else { throw SystemCallError(call: name(), errno: EFAULT) }
    return result
}

/// Runs a call in the convention of alsa-lib (and of the kernel inside):
/// a negative result is the negated errno. Retries -EINTR; throws an error
/// naming the call for any other negative result; answers the result.
@discardableResult
func negatedErrnoCall(_ name: @autoclosure () -> String, _ body: () -> Int) throws(SystemCallError) -> Int {
    try checkedCall(name, retryingInterrupts: true, failed: { $0 < 0 }, errno: { Int32(truncatingIfNeeded: -$0) }, body)
}

/// The loop every runner shares. `retryingInterrupts` is false only for
/// close(2), which on Linux has released the descriptor even when
/// interrupted: calling it again could close a descriptor another thread
/// has just been given.
func checkedCall<Result>(_ name: () -> String, retryingInterrupts: Bool, failed: (Result) -> Bool,
                         errno readErrno: (Result) -> Int32, _ body: () -> Result) throws(SystemCallError) -> Result {
    while true {
        let code: Int32
        if let forced = SystemCallMocking.intercept(name) {
            code = forced
        } else {
            let result = body()
            guard failed(result) else { return result }
            code = readErrno(result)
        }
        if code == EINTR && retryingInterrupts { continue }
        throw SystemCallError(call: name(), errno: code)
    }
}
