#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call (with the request it made, such as
/// `ioctl(VIDIOC_QUERYCAP)`) and the `errno` it returned.
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call and, for ioctl, its request name.
    public let call: String
    /// The value of `errno` the call left.
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The C library's text for `errno`, such as "Device or resource busy".
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String { "\(call): \(reason)" }
}
