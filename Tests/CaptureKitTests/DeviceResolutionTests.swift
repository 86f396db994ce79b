@testable import CaptureKit
import Glibc
import Testing

/// How a device named on the command line is found, and the errors for names that fail.
struct DeviceResolutionTests {
    let tree: TemporaryTree
    let v4l2 = FakeV4L2()
    let discovery: DeviceDiscovery
    var dev: String { "\(tree.root)/dev" }

    init() throws {
        tree = try TemporaryTree()
        let dev = "\(tree.root)/dev"
        for (name, caps, bus) in [("video0", Caps.capture, "usb-1"), ("video1", Caps.output, "usb-1"), ("video2", Caps.capture, "usb-2")] {
            try tree.file("dev/\(name)")
            v4l2.nodes["\(dev)/\(name)"] = .init(capability: Caps.node(caps, bus: bus))
        }
        try tree.file("dev/notv4l2")
        v4l2.nodes["\(dev)/notv4l2"] = .init(capability: nil)
        try tree.link("dev/v4l/by-path/cam", to: "../../video2")
        var alsa = FakeALSA()
        alsa.devices = [ALSACaptureDescription(cardIndex: 0, cardID: "Dummy", cardName: "Dummy", driver: "Dummy", device: 0, pcmName: "PCM", subdevices: 1)]
        alsa.formats = ["hw:Dummy,0": [], "plughw:0,0": [], "default": []]
        // alsa-lib's answers: EINVAL for a card number past 31, ENOENT for a
        // missing card below it, EINVAL for a bad argument on a card that exists.
        alsa.openErrors = ["hw:Busy,0": EBUSY, "hw:99": EINVAL, "plughw:CARD=99,DEV=0": EINVAL, "hw:5,0": ENOENT,
                           "hw:Dummy,9": ENOENT, "hw:0,0,abc": EINVAL]
        discovery = DeviceDiscovery(v4l2: v4l2, alsa: alsa, devRoot: dev, sysfsRoot: "\(tree.root)/sys")
    }

    @Test func byIndex() throws {
        #expect(try discovery.resolve("video:1").path == "\(dev)/video2")
        #expect(try discovery.resolve("audio:0").path == "hw:Dummy,0")
        #expect(try discovery.resolve("audio:1").path == "default")
    }

    @Test func byUniqueIDAndPath() throws {
        #expect(try discovery.resolve("v4l2:usb-2:Test_Camera:0").path == "\(dev)/video2")
        #expect(try discovery.resolve("alsa:Dummy:0").path == "hw:Dummy,0")
        #expect(try discovery.resolve("\(dev)/video0").uniqueID == "v4l2:usb-1:Test_Camera:0")
        // A link to a node resolves to the listed device, with its unique ID.
        #expect(try discovery.resolve("\(dev)/v4l/by-path/cam").uniqueID == "v4l2:usb-2:Test_Camera:0")
    }

    @Test func anUnlistedALSANameThatOpensIsAMicrophone() throws {
        let device = try discovery.resolve("plughw:0,0")
        #expect(device.mediaType == .audio)
        #expect(device.path == "plughw:0,0")
    }

    @Test func indexOutOfRange() {
        #expect(throws: DeviceError.noSuchDevice("video:5", reason: "no camera with index 5; there are 2 (video:0…video:1)")) {
            try discovery.resolve("video:5")
        }
        #expect(throws: DeviceError.self) { try discovery.resolve("video:-1") }
        #expect(throws: DeviceError.self) { try discovery.resolve("video:x") }
    }

    @Test func anOutputNodeIsNotACaptureDevice() {
        #expect {
            try discovery.resolve("\(dev)/video1")
        } throws: { error in
            guard case .notACaptureDevice(_, let reason) = error as? DeviceError else { return false }
            return reason.contains("video output")
        }
    }

    @Test func aFileThatIsNotV4L2() {
        #expect(throws: DeviceError.notACaptureDevice("\(dev)/notv4l2", reason: "not a V4L2 device")) {
            try discovery.resolve("\(dev)/notv4l2")
        }
    }

    @Test func aMissingPath() {
        #expect(throws: DeviceError.noSuchDevice("\(dev)/video9", reason: "no such file or device")) {
            try discovery.resolve("\(dev)/video9")
        }
    }

    @Test func permissionAndBusyErrorsKeepTheirKind() throws {
        v4l2.openErrors["\(dev)/video2"] = EACCES
        #expect {
            try discovery.resolve("\(dev)/video2").videoFormats()
        } throws: { error in
            if case .permissionDenied = error as? DeviceError { return true }
            return false
        }
        #expect {
            try discovery.resolve("hw:Busy,0")
        } throws: { error in
            if case .busy = error as? DeviceError { return true }
            return false
        }
    }

    @Test func anUnknownName() {
        #expect {
            try discovery.resolve("frontcam")
        } throws: { error in
            if case .noSuchDevice = error as? DeviceError { return true }
            return false
        }
        #expect {
            try discovery.resolve("hw:Nope,0")
        } throws: { error in
            if case .noSuchDevice = error as? DeviceError { return true }
            return false
        }
    }

    @Test(arguments: [("hw:99", "99"), ("plughw:CARD=99,DEV=0", "99"), ("hw:5,0", "5")])
    func aMissingSoundCardIsNoSuchDevice(_ name: String, _ card: String) {
        let reason = "no such ALSA capture device: there is no sound card \(card); 'capctl list-devices' lists the microphones"
        #expect(throws: DeviceError.noSuchDevice(name, reason: reason)) { try discovery.resolve(name) }
        #expect(throws: DeviceError.noSuchDevice(name, reason: reason)) { try discovery.resolve(name, expecting: .audio) }
    }

    @Test func aCardThatExistsKeepsTheErrorItsOpenGave() {
        #expect(throws: DeviceError.noSuchDevice("hw:Dummy,9", reason: "no such ALSA capture device")) { try discovery.resolve("hw:Dummy,9") }
        #expect {
            try discovery.resolve("hw:0,0,abc")
        } throws: { error in
            if case .ioFailure(_, let call) = error as? DeviceError { return call.errno == EINVAL }
            return false
        }
    }

    @Test(arguments: [("hw:99", "99"), ("hw:1,0", "1"), ("plughw:CARD=Loopback,DEV=1", "Loopback"), ("hw:CARD=\"Loopback\"", "Loopback"),
                      ("sysdefault:99", "99"), ("dsnoop:PCH", "PCH"), ("default", nil), ("hw", nil), ("mymic:1", nil), ("plug:hw", nil)] as [(String, String?)])
    func theCardOfAPCMName(_ name: String, _ card: String?) {
        #expect(ALSAPCMName.card(in: name) == card)
    }

    @Test func theWrongKindIsRefused() {
        #expect {
            try discovery.resolve("audio:0", expecting: .video)
        } throws: { error in
            if case .notACaptureDevice = error as? DeviceError { return true }
            return false
        }
    }
}
