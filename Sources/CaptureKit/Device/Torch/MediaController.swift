import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// A character device's number.
struct DeviceNumber: Sendable, Hashable, CustomStringConvertible {
    let major: UInt32
    let minor: UInt32

    init(major: UInt32, minor: UInt32) {
        self.major = major
        self.minor = minor
    }

    var description: String { "\(major):\(minor)" }
}

/// The graph of a media device (MEDIA_IOC_G_TOPOLOGY), as far as finding a
/// camera's flash needs it.
struct MediaTopology: Sendable, Hashable {
    struct Entity: Sendable, Hashable {
        let id: UInt32
        let name: String
        /// MEDIA_ENT_F_*.
        let function: UInt32
        init(id: UInt32, name: String, function: UInt32) {
            self.id = id
            self.name = name
            self.function = function
        }
    }

    struct Interface: Sendable, Hashable {
        let id: UInt32
        /// MEDIA_INTF_T_*.
        let type: UInt32
        let deviceNumber: DeviceNumber
        init(id: UInt32, type: UInt32, deviceNumber: DeviceNumber) {
            self.id = id
            self.type = type
            self.deviceNumber = deviceNumber
        }
    }

    /// An interface link: the device node `interfaceID` reaches entity `entityID`.
    struct InterfaceLink: Sendable, Hashable {
        let interfaceID: UInt32
        let entityID: UInt32
        init(interfaceID: UInt32, entityID: UInt32) {
            self.interfaceID = interfaceID
            self.entityID = entityID
        }
    }

    var entities: [Entity]
    var interfaces: [Interface]
    var links: [InterfaceLink]

    init(entities: [Entity], interfaces: [Interface], links: [InterfaceLink]) {
        self.entities = entities
        self.interfaces = interfaces
        self.links = links
    }

    static let flashFunction = cv4l2_MEDIA_ENT_F_FLASH
    static let subdeviceInterface = cv4l2_MEDIA_INTF_T_V4L_SUBDEV

    /// The device numbers of the flash sub-devices in this graph, when
    /// `videoNode` is one of its interfaces (a flash belongs to the camera
    /// module of its own graph).
    func flashSubdevices(forVideoNode videoNode: DeviceNumber) -> [DeviceNumber] {
        guard interfaces.contains(where: { $0.deviceNumber == videoNode }) else { return [] }
        let flashIDs = Set(entities.filter { $0.function == MediaTopology.flashFunction }.map(\.id))
        let interfaceIDs = links.filter { flashIDs.contains($0.entityID) }.map(\.interfaceID)
        return interfaces.filter { interfaceIDs.contains($0.id) && $0.type == MediaTopology.subdeviceInterface }.map(\.deviceNumber)
    }
}

/// The media-controller part of the seam: tests replay recorded graphs.
protocol MediaControllerInterface: Sendable {
    /// The number of the character device at `path`, or nil when it is not one.
    func deviceNumber(of path: String) -> DeviceNumber?
    /// MEDIA_IOC_G_TOPOLOGY on the media device at `path`.
    func topology(of path: String) throws(SystemCallError) -> MediaTopology
}

/// The kernel's media controller.
struct KernelMediaController: MediaControllerInterface {
    init() {}

    func deviceNumber(of path: String) -> DeviceNumber? {
        guard let info = try? Posix.stat(path), info.st_mode & S_IFMT == S_IFCHR else { return nil }
        let device = UInt64(info.st_rdev)
        // major(3) and minor(3) are macros: their glibc encoding.
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        return DeviceNumber(major: UInt32(truncatingIfNeeded: major), minor: UInt32(truncatingIfNeeded: minor))
    }

    func topology(of path: String) throws(SystemCallError) -> MediaTopology {
        let fd = try Posix.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        defer { try? Posix.close(fd) }
        // The first call counts; the second fills arrays of those sizes. A
        // graph that grows in between makes the kernel answer ENOSPC: ask again.
        for _ in 0..<4 {
            var counts = media_v2_topology()
            try ioctl(fd, "MEDIA_IOC_G_TOPOLOGY", &counts)
            var entities = [media_v2_entity](repeating: media_v2_entity(), count: Int(counts.num_entities))
            var interfaces = [media_v2_interface](repeating: media_v2_interface(), count: Int(counts.num_interfaces))
            var links = [media_v2_link](repeating: media_v2_link(), count: Int(counts.num_links))
            var filled = media_v2_topology()
            filled.num_entities = counts.num_entities
            filled.num_interfaces = counts.num_interfaces
            filled.num_links = counts.num_links
            do {
                try entities.withUnsafeMutableBufferPointer { (entityBuffer) throws(SystemCallError) in
                    try interfaces.withUnsafeMutableBufferPointer { (interfaceBuffer) throws(SystemCallError) in
                        try links.withUnsafeMutableBufferPointer { (linkBuffer) throws(SystemCallError) in
                            filled.ptr_entities = UInt64(UInt(bitPattern: entityBuffer.baseAddress))
                            filled.ptr_interfaces = UInt64(UInt(bitPattern: interfaceBuffer.baseAddress))
                            filled.ptr_links = UInt64(UInt(bitPattern: linkBuffer.baseAddress))
                            try ioctl(fd, "MEDIA_IOC_G_TOPOLOGY", &filled)
                        }
                    }
                }
            } catch where error.errno == ENOSPC {
                continue
            }
            let interfaceLinkType: UInt32 = 1 << 28
            return MediaTopology(
                entities: entities.prefix(Int(filled.num_entities)).map { entity in
                    MediaTopology.Entity(id: entity.id, name: cString(entity.name), function: entity.function)
                },
                interfaces: interfaces.prefix(Int(filled.num_interfaces)).map { interface in
                    MediaTopology.Interface(id: interface.id, type: interface.intf_type,
                                            deviceNumber: DeviceNumber(major: interface.devnode.major, minor: interface.devnode.minor))
                },
                links: links.prefix(Int(filled.num_links)).filter { $0.flags & (0xf << 28) == interfaceLinkType }.map { link in
                    MediaTopology.InterfaceLink(interfaceID: link.source_id, entityID: link.sink_id)
                })
        }
        throw SystemCallError(call: "ioctl(MEDIA_IOC_G_TOPOLOGY)", errno: EAGAIN)
    }

    private func ioctl(_ fd: Int32, _ name: String, _ argument: inout media_v2_topology) throws(SystemCallError) {
        _ = try withUnsafeMutablePointer(to: &argument) { (pointer) throws(SystemCallError) in
            try Posix.ioctl(fd, name, cv4l2_MEDIA_IOC_G_TOPOLOGY, UnsafeMutableRawPointer(pointer))
        }
    }
}
