#if canImport(Glibc)
import Glibc
#endif

/// Works out why this process may not open a device node, in words that say
/// how to get access (usually: join the group that owns it).
enum AccessCheck {
    /// The access this process has to a device node, judged with access(2).
    static func access(toNode path: String) -> DeviceAccess {
        if Posix.isAccessible(path, R_OK | W_OK) { return .authorized }
        return .denied(reason: deniedReason(path: path))
    }

    /// A reason for EACCES/EPERM on `path`, from its mode, owner and group.
    static func deniedReason(path: String) -> String {
        guard let info = try? Posix.stat(path) else { return "permission denied" }
        let groupName = getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } ?? "\(info.st_gid)"
        let ownerName = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "\(info.st_uid)"
        let userName = getpwuid(geteuid()).map { String(cString: $0.pointee.pw_name) } ?? "\(geteuid())"
        return explanation(
            mode: UInt32(info.st_mode), owner: ownerName, group: groupName, groupID: info.st_gid,
            user: userName, userIsOwner: info.st_uid == geteuid(), userGroups: currentGroups())
    }

    /// The explanation for given facts; separate from the system calls so it can be tested.
    static func explanation(mode: UInt32, owner: String, group: String, groupID: gid_t,
                            user: String, userIsOwner: Bool, userGroups: [gid_t]) -> String {
        let permissions = modeString(mode)
        let facts = "permission denied (\(permissions) \(owner):\(group))"
        if !userIsOwner, !userGroups.contains(groupID), mode & 0o060 == 0o060 {
            return "\(facts): user '\(user)' is not in group '\(group)'; "
                + "add it with 'sudo usermod -aG \(group) \(user)' and log in again, or add a udev rule granting access"
        }
        return "\(facts); ask an administrator for read and write access, for example with a udev rule"
    }

    /// `crw-rw----` for a mode.
    static func modeString(_ mode: UInt32) -> String {
        let kind: Character
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFCHR): kind = "c"
        case UInt32(S_IFBLK): kind = "b"
        case UInt32(S_IFDIR): kind = "d"
        default: kind = "-"
        }
        let letters: [Character] = ["r", "w", "x"]
        let bits = (0..<9).map { index -> Character in
            mode & (0o400 >> UInt32(index)) != 0 ? letters[index % 3] : "-"
        }
        return String([kind] + bits)
    }

    private static func currentGroups() -> [gid_t] {
        ((try? Posix.supplementaryGroups()) ?? []) + [getegid()]
    }
}
