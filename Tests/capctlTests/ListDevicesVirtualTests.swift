import Foundation
import Testing

/// The virtual devices in `list-devices`: after the hardware, marked, filtered by type.
struct ListDevicesVirtualTests {
    static func devices(_ arguments: [String]) throws -> [[String: Any]] {
        let result = try CapctlRun.run(["list-devices", "--json"] + arguments)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return try #require(object?["devices"] as? [[String: Any]])
    }

    @Test func virtualDevicesComeAfterTheHardwareMarkedVirtual() throws {
        let devices = try Self.devices([])
        let flags = devices.map { $0["virtual"] as? Bool }
        #expect(!flags.contains(nil), "every device says whether it is virtual")
        // Hardware first, then the virtual devices.
        #expect(flags == flags.sorted { $0 == false && $1 == true })
        let virtual = devices.filter { $0["virtual"] as? Bool == true }
        #expect(virtual.map { $0["path"] as? String } == ["test-pattern", "test-tone"])
        #expect(virtual.map { $0["uniqueID"] as? String } == ["virtual:test-pattern", "virtual:test-tone"])
        #expect(virtual.map { $0["mediaType"] as? String } == ["video", "audio"])
        #expect(virtual.map { $0["name"] as? String } == ["Test pattern", "Test tone (440 Hz)"])
        for device in virtual {
            #expect(device["index"] is NSNull)
            #expect(device["access"] as? String == "authorized")
            #expect(Set(device.keys) == Set(devices[0].keys))
        }
    }

    @Test(arguments: [("video", "test-pattern"), ("audio", "test-tone")])
    func typeFiltersVirtualDevicesToo(_ type: String, _ path: String) throws {
        let devices = try Self.devices(["--type", type])
        #expect(devices.allSatisfy { $0["mediaType"] as? String == type })
        #expect(devices.filter { $0["virtual"] as? Bool == true }.map { $0["path"] as? String } == [path])
    }

    @Test func theTextListingMarksVirtualDevices() throws {
        let result = try CapctlRun.run(["list-devices"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("video (virtual)  Test pattern  test-pattern\n    unique ID  virtual:test-pattern\n"))
        #expect(result.stdout.contains("audio (virtual)  Test tone (440 Hz)  test-tone\n    unique ID  virtual:test-tone\n"))
        let audioOnly = try CapctlRun.run(["list-devices", "--type", "audio"])
        #expect(!audioOnly.stdout.contains("test-pattern"))
        #expect(audioOnly.stdout.contains("test-tone"))
    }
}
