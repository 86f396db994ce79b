import Foundation

/// A scratch directory for a fake /dev or /sys tree, removed when released.
final class TemporaryTree {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("capctl-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Creates a file (and its directories) with `contents`.
    func file(_ relative: String, _ contents: String = "") throws {
        let path = "\(root)/\(relative)"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try contents.write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// Creates a symbolic link at `relative` pointing to `target` (relative or absolute).
    func link(_ relative: String, to target: String) throws {
        let path = "\(root)/\(relative)"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
    }
}
