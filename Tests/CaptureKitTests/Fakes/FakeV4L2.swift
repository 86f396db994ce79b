@testable import CaptureKit
import Glibc

/// A V4L2 system replayed from recorded replies: each node path maps to what
/// the kernel answered for it, errors (errno) included.
final class FakeV4L2: V4L2Interface, @unchecked Sendable {
    var nodes: [String: FakeNode.Recording] = [:]
    /// Cameras that stream, by node path; each open is a handle on one.
    var cameras: [String: FakeV4L2Camera] = [:]
    /// errno for `open` of a path (EACCES, EBUSY …).
    var openErrors: [String: Int32] = [:]
    private(set) var openedWithLibv4l2: [String] = []

    func open(_ path: String, options: V4L2OpenOptions) throws(SystemCallError) -> any V4L2Node {
        if let code = openErrors[path] { throw SystemCallError(call: "open(\(path))", errno: code) }
        if let camera = cameras[path] {
            if options.useLibv4l2 { openedWithLibv4l2.append(path) }
            return FakeV4L2CameraHandle(camera: camera, throughLibv4l2: options.useLibv4l2)
        }
        guard let recording = nodes[path] else { throw SystemCallError(call: "open(\(path))", errno: ENOENT) }
        if options.useLibv4l2 { openedWithLibv4l2.append(path) }
        return FakeNode(recording: recording, libv4l2: options.useLibv4l2)
    }
}

final class FakeNode: V4L2Node {
    struct Recording {
        /// QUERYCAP's reply, or nil for a file that is not a V4L2 node (ENOTTY).
        var capability: V4L2Capability?
        var formats: [V4L2FormatDescription] = []
        /// Formats only libv4l2 adds (flagged emulated).
        var emulatedFormats: [V4L2FormatDescription] = []
        var sizes: [UInt32: [V4L2FrameSizeReply]] = [:]
        /// Intervals by "FOURCC WxH".
        var intervals: [String: [V4L2FrameIntervalReply]] = [:]
        /// When set, ENUM_FRAMEINTERVALS fails with this errno.
        var intervalError: Int32?
        var controls: [UInt32: (V4L2ControlDescription, Int64)] = [:]
        var current = V4L2CurrentFormat(pixelFormat: 0, width: 0, height: 0)
        var currentInterval: Fraction?
    }

    let recording: Recording
    let libv4l2: Bool

    init(recording: Recording, libv4l2: Bool) {
        self.recording = recording
        self.libv4l2 = libv4l2
    }

    func queryCapability() throws(SystemCallError) -> V4L2Capability {
        guard let capability = recording.capability else { throw SystemCallError(call: "ioctl(VIDIOC_QUERYCAP)", errno: ENOTTY) }
        return capability
    }

    func enumerateFormat(index: UInt32) throws(SystemCallError) -> V4L2FormatDescription? {
        let all = recording.formats + (libv4l2 ? recording.emulatedFormats : [])
        return Int(index) < all.count ? all[Int(index)] : nil
    }

    func enumerateFrameSize(pixelFormat: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameSizeReply? {
        let list = recording.sizes[pixelFormat] ?? []
        return Int(index) < list.count ? list[Int(index)] : nil
    }

    func enumerateFrameInterval(pixelFormat: UInt32, width: UInt32, height: UInt32, index: UInt32) throws(SystemCallError) -> V4L2FrameIntervalReply? {
        if let code = recording.intervalError { throw SystemCallError(call: "ioctl(VIDIOC_ENUM_FRAMEINTERVALS)", errno: code) }
        let list = recording.intervals["\(FourCC(code: pixelFormat)) \(width)x\(height)"] ?? []
        return Int(index) < list.count ? list[Int(index)] : nil
    }

    func queryControl(id: UInt32) throws(SystemCallError) -> V4L2ControlDescription? {
        recording.controls[id]?.0
    }

    func queryMenuItem(controlID: UInt32, index: UInt32) throws(SystemCallError) -> String? { nil }

    func controlValue(id: UInt32) throws(SystemCallError) -> Int64 {
        guard let control = recording.controls[id] else { throw SystemCallError(call: "ioctl(VIDIOC_G_EXT_CTRLS)", errno: EINVAL) }
        return control.1
    }

    func currentFormat() throws(SystemCallError) -> V4L2CurrentFormat { recording.current }

    func currentFrameInterval() throws(SystemCallError) -> Fraction? { recording.currentInterval }
}

/// An ALSA system replayed from recorded replies.
struct FakeALSA: ALSAInterface {
    var devices: [ALSACaptureDescription] = []
    /// Capture PCMs that stream, by name.
    var microphones: [String: FakeMicrophone] = [:]
    /// Formats by PCM name; a name missing here fails to open with ENOENT.
    var formats: [String: [AudioFormat]] = [:]
    var openErrors: [String: Int32] = [:]
    /// Cards present besides those of `devices` (numbers or IDs).
    var otherCards: Set<String> = []

    func captureDevices() -> [ALSACaptureDescription] { devices }

    func cardExists(_ card: String) -> Bool {
        otherCards.contains(card) || devices.contains { $0.cardID == card || String($0.cardIndex) == card }
    }

    func openCapture(_ name: String) throws(SystemCallError) -> any ALSACapturePCM {
        if let code = openErrors[name] { throw SystemCallError(call: "snd_pcm_open(\(name))", errno: code) }
        guard let microphone = microphones[name] else { throw SystemCallError(call: "snd_pcm_open(\(name))", errno: ENOENT) }
        microphone.open()
        return microphone
    }

    func captureFormats(_ name: String) throws(SystemCallError) -> [AudioFormat] {
        if let code = openErrors[name] { throw SystemCallError(call: "snd_pcm_open(\(name))", errno: code) }
        guard let list = formats[name] else { throw SystemCallError(call: "snd_pcm_open(\(name))", errno: ENOENT) }
        return list
    }
}

/// Capability words for recordings.
enum Caps {
    static let capture: UInt32 = 0x0000_0001
    static let output: UInt32 = 0x0000_0002
    static let captureMultiplanar: UInt32 = 0x0000_1000
    static let metaCapture: UInt32 = 0x0080_0000
    static let streaming: UInt32 = 0x0400_0000
    static let deviceCaps: UInt32 = 0x8000_0000

    static func node(_ nodeCaps: UInt32, card: String = "Test Camera", bus: String = "usb-0000:00:14.0-1", driver: String = "uvcvideo") -> V4L2Capability {
        V4L2Capability(driver: driver, card: card, busInfo: bus, capabilities: capture | output | metaCapture | streaming | deviceCaps,
                       deviceCaps: nodeCaps | streaming)
    }
}

func fourcc(_ text: String) -> UInt32 { FourCC(text)!.code }
