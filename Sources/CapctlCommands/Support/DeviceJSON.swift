import CaptureKit

/// A device as `list-devices --json` and `formats --json` print it. The field
/// names are part of capctl's interface: scripts read them.
package struct DeviceJSON: Encodable {
    let index: Int?
    let path: String
    let uniqueID: String
    let name: String
    let mediaType: String
    let driver: String
    let bus: String
    let modelID: String?
    let position: String
    let hasTorch: Bool
    let hasFlash: Bool
    let access: String
    let accessReason: String?
    /// Whether the device is made in software (test pattern, test tone) rather than hardware.
    let isVirtual: Bool

    package init(_ device: CaptureDevice, index: Int?) {
        self.index = index
        path = device.path
        uniqueID = device.uniqueID
        name = device.localizedName
        mediaType = device.mediaType.rawValue
        driver = device.driver
        bus = device.bus
        modelID = device.modelID
        position = device.position.rawValue
        hasTorch = device.hasTorch
        hasFlash = device.hasFlash
        switch device.access {
        case .authorized:
            access = "authorized"
            accessReason = nil
        case .denied(let reason):
            access = "denied"
            accessReason = reason
        }
        isVirtual = false
    }

    /// A virtual device: named by its specifier, with no index (`video:N`
    /// and `audio:N` count hardware only), always open to everyone.
    init(_ device: VirtualDevice) {
        index = nil
        path = device.specifier
        uniqueID = device.uniqueID
        name = device.localizedName
        mediaType = device.mediaType.rawValue
        driver = "virtual"
        bus = ""
        modelID = nil
        position = DevicePosition.unspecified.rawValue
        hasTorch = false
        hasFlash = false
        access = "authorized"
        accessReason = nil
        isVirtual = true
    }

    /// A device as a command resolved it; `discovery` gives a real one's index.
    init(_ device: NamedDevice, in discovery: DeviceDiscovery) {
        switch device {
        case .hardware(let device):
            self.init(device, index: discovery.devices(for: device.mediaType).firstIndex { $0.uniqueID == device.uniqueID })
        case .virtual(let device):
            self.init(device)
        }
    }

    /// Absent optionals are written as null, so every object has every field.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(index, forKey: .index)
        try container.encode(path, forKey: .path)
        try container.encode(uniqueID, forKey: .uniqueID)
        try container.encode(name, forKey: .name)
        try container.encode(mediaType, forKey: .mediaType)
        try container.encode(driver, forKey: .driver)
        try container.encode(bus, forKey: .bus)
        try container.encode(modelID, forKey: .modelID)
        try container.encode(position, forKey: .position)
        try container.encode(hasTorch, forKey: .hasTorch)
        try container.encode(hasFlash, forKey: .hasFlash)
        try container.encode(access, forKey: .access)
        try container.encode(accessReason, forKey: .accessReason)
        try container.encode(isVirtual, forKey: .isVirtual)
    }

    private enum CodingKeys: String, CodingKey {
        case index, path, uniqueID, name, mediaType, driver, bus, modelID, position, hasTorch, hasFlash, access, accessReason
        case isVirtual = "virtual"
    }
}
