import ArgumentParser

/// What a credential may do. Every role may use what `view` allows; `record` and
/// `control` add their own operations, and `admin` may do everything.
package enum AccessRole: String, Codable, Sendable, CaseIterable, Comparable, ExpressibleByArgument {
    /// Live views (MJPEG, snapshots, WebRTC), view links, the page, the session and the devices.
    case view
    /// Recordings, markers, photos, and the folder's files: list and download.
    case record
    /// Camera controls and the torch.
    case control
    /// Everything, deleting files and the metrics included.
    case admin

    /// Whether a credential of this role may perform an operation that needs `needed`.
    package func allows(_ needed: AccessRole) -> Bool {
        self == .admin || needed == .view || needed == self
    }

    package static func < (lhs: AccessRole, rhs: AccessRole) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
