#if canImport(Glibc)
import Glibc
#endif

/// Reads device facts from sysfs under a root directory, "/sys" on a real
/// system and a prepared tree in tests.
struct Sysfs: Sendable {
    let root: String

    init(root: String = "/sys") {
        self.root = root
    }

    /// The USB `vendor:product` of the device behind a class device such as
    /// `video4linux/video0` or `sound/card1`, or nil when it is not on USB.
    /// The class device's `device` link points at the USB interface; the
    /// `idVendor`/`idProduct` files sit on an ancestor (the USB device).
    func usbModelID(classDevice: String) -> String? {
        guard var directory = resolvedPath("\(root)/class/\(classDevice)/device") else { return nil }
        let top = resolvedPath(root) ?? root
        while directory.hasPrefix(top), directory.count > top.count {
            if let vendor = readAttribute("\(directory)/idVendor"), let product = readAttribute("\(directory)/idProduct") {
                return "\(vendor):\(product)"
            }
            directory = parent(of: directory)
        }
        return nil
    }

    /// The trimmed contents of a sysfs attribute relative to the root, such as
    /// `class/video4linux/video0/name`.
    func attribute(_ relativePath: String) -> String? {
        readAttribute("\(root)/\(relativePath)")
    }

    /// The first line of an attribute file, trimmed.
    private func readAttribute(_ path: String) -> String? {
        guard let bytes = try? Posix.readFile(path, limit: 4096) else { return nil }
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") && $0 != 0 }
        return trimmed(String(decoding: line, as: UTF8.self))
    }

    private func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}

/// The canonical path of `path` with every symbolic link resolved, or nil
/// when it does not exist.
func resolvedPath(_ path: String) -> String? {
    try? Posix.realpath(path)
}

/// `text` without leading and trailing white space (sysfs ends values with a newline).
private func trimmed(_ text: String) -> String {
    var slice = Substring(text)
    while let first = slice.first, first.isWhitespace { slice.removeFirst() }
    while let last = slice.last, last.isWhitespace { slice.removeLast() }
    return String(slice)
}
