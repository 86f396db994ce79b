import Foundation
import Testing

/// Bad device arguments give one line on stderr naming the device and the
/// cause, the documented exit status, and nothing on stdout. These need no
/// camera: the paths are ordinary files.
struct DeviceBadInputTests {
    @Test(arguments: [
        (["formats", "/nonexistent/video7"], Int32(66), "/nonexistent/video7: no such file or device"),
        (["formats", "/dev/null"], 65, "/dev/null: not a V4L2 device"),
        (["formats", "/etc/hostname"], 65, "/etc/hostname: not a V4L2 device"),
        (["formats", "video:99"], 66, "video:99: no camera with index 99"),
        (["formats", "audio:99"], 66, "audio:99: no microphone with index 99"),
        (["formats", "video:x"], 66, "video:x: 'x' is not a device index"),
        (["formats", "hw:NoSuchCard,0"], 66, "hw:NoSuchCard,0: no such ALSA capture device"),
        // alsa-lib refuses card numbers past 31 with EINVAL: still no such device.
        (["formats", "hw:99"], 66, "hw:99: no such ALSA capture device: there is no sound card 99; 'capctl list-devices' lists the microphones"),
        (["formats", "plughw:CARD=99,DEV=0"], 66, "plughw:CARD=99,DEV=0: no such ALSA capture device: there is no sound card 99"),
        (["formats", "nonsense"], 66, "nonsense: no device with this path, unique ID or name"),
        (["list-devices", "--type", "radio"], 64, "radio"),
        (["formats"], 64, "Missing expected argument"),
        (["formats", "/dev/null", "--bogus"], 64, "--bogus"),
        (["no-such-command"], 64, "no-such-command"),
    ])
    func failsWithOneLineAndTheDocumentedStatus(arguments: [String], status: Int32, message: String) throws {
        let result = try CapctlRun.run(arguments)
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.hasPrefix("capctl: error: "))
        #expect(result.stderr.contains(message))
    }

    @Test func diagnosticsAreNotColouredOffATerminal() throws {
        let result = try CapctlRun.run(["formats", "/dev/null"])
        #expect(!result.stderr.contains("\u{1B}["))
    }

    @Test func listDevicesJSONIsOneDocumentWithADevicesArray() throws {
        let result = try CapctlRun.run(["list-devices", "--json"])
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let devices = try #require(object?["devices"] as? [[String: Any]])
        // ALSA's default is always listed, with every documented field.
        let defaultDevice = try #require(devices.first { $0["path"] as? String == "default" })
        for field in ["path", "uniqueID", "name", "mediaType", "driver", "bus", "modelID", "position", "hasTorch", "hasFlash", "access", "virtual"] {
            #expect(defaultDevice.keys.contains(field), "missing \(field)")
        }
        #expect(defaultDevice["mediaType"] as? String == "audio")
        #expect(defaultDevice["virtual"] as? Bool == false)
    }

    @Test func typeFiltersTheList() throws {
        let result = try CapctlRun.run(["list-devices", "--json", "--type", "video"])
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let devices = try #require(object?["devices"] as? [[String: Any]])
        #expect(devices.allSatisfy { $0["mediaType"] as? String == "video" })
    }
}
