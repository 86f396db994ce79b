#if canImport(Glibc)
import Glibc
#endif

/// Finds capture devices: V4L2 nodes that capture video, and ALSA PCMs with
/// a capture stream plus `default`. The counterpart of AVCaptureDevice's
/// discovery class methods; the interfaces and roots are parameters so tests
/// can replay a recorded system.
public struct DeviceDiscovery: Sendable {
    let v4l2: any V4L2Interface
    let alsa: any ALSAInterface
    /// Where device nodes live: "/dev".
    let devRoot: String
    let sysfs: Sysfs

    /// Discovery of this system's devices.
    public init() {
        self.init(v4l2: KernelV4L2())
    }

    init(v4l2: any V4L2Interface = KernelV4L2(), alsa: any ALSAInterface = KernelALSA(),
                devRoot: String = "/dev", sysfsRoot: String = "/sys") {
        self.v4l2 = v4l2
        self.alsa = alsa
        self.devRoot = devRoot
        self.sysfs = Sysfs(root: sysfsRoot)
    }

    /// Every capture device, cameras first, each kind in a stable order
    /// (node number; card and device number).
    public func devices(for mediaType: MediaType? = nil) -> [CaptureDevice] {
        var found: [CaptureDevice] = []
        if mediaType != .audio { found += videoDevices() }
        if mediaType != .video { found += audioDevices() }
        return found
    }

    /// The device used when none is named: the first camera, or ALSA's `default`.
    public func defaultDevice(for mediaType: MediaType) -> CaptureDevice? {
        devices(for: mediaType).first
    }

    /// The device with this unique ID, if it is present.
    public func device(uniqueID: String) -> CaptureDevice? {
        devices().first { $0.uniqueID == uniqueID }
    }

    /// The device a user named: its unique ID, `video:N`/`audio:N` (the N-th
    /// of that kind in `devices(for:)`), a V4L2 node path (or a link to one),
    /// or an ALSA PCM name. When `mediaType` is given, a device of the other
    /// kind is refused as not a capture device of that kind.
    public func resolve(_ specifier: String, expecting mediaType: MediaType? = nil) throws(DeviceError) -> CaptureDevice {
        let device: CaptureDevice
        do {
            device = try find(specifier)
        } catch {
            // A path that is no camera was probed as one; for a microphone, say what names one instead.
            if mediaType == .audio, specifier.hasPrefix("/"), case .notACaptureDevice = error {
                throw .notACaptureDevice(specifier, reason: "not a microphone; name an ALSA capture device as hw:CARD,DEVICE, default or audio:N")
            }
            throw error
        }
        if let mediaType, device.mediaType != mediaType {
            throw .notACaptureDevice(specifier, reason: "not \(mediaType == .video ? "a camera" : "a microphone"); it is \(device.mediaType == .video ? "a camera" : "a microphone")")
        }
        return device
    }

    private func find(_ specifier: String) throws(DeviceError) -> CaptureDevice {
        if let indexed = try indexedDevice(specifier) { return indexed }
        let listed = devices()
        if let match = listed.first(where: { $0.uniqueID == specifier || $0.path == specifier }) { return match }
        if specifier.hasPrefix("/") {
            guard let canonical = resolvedPath(specifier) else {
                throw .noSuchDevice(specifier, reason: "no such file or device")
            }
            if let match = listed.first(where: { $0.mediaType == .video && resolvedPath($0.path) == canonical }) { return match }
            // Not a listed camera: probing says what it is instead.
            let probe = try V4L2Probe.open(specifier, interface: v4l2, options: V4L2OpenOptions())
            try probe.requireVideoCapture()
            return try describe(probe: probe, nodeName: nodeName(of: canonical), index: 0)
        }
        if specifier.contains(":") || specifier == "default" {
            return try unlistedALSADevice(specifier)
        }
        throw .noSuchDevice(specifier, reason: "no device with this path, unique ID or name; 'capctl list-devices' lists them")
    }

    /// `video:N` or `audio:N`, or nil when the specifier has another form.
    private func indexedDevice(_ specifier: String) throws(DeviceError) -> CaptureDevice? {
        let parts = specifier.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let kind = MediaType(rawValue: String(parts[0])) else { return nil }
        guard let index = Int(parts[1]), index >= 0 else {
            throw .noSuchDevice(specifier, reason: "'\(parts[1])' is not a device index; use \(kind.rawValue):0, \(kind.rawValue):1 …")
        }
        let candidates = devices(for: kind)
        guard index < candidates.count else {
            let have = candidates.isEmpty ? "there are none" : "there \(candidates.count == 1 ? "is" : "are") \(candidates.count) (\(kind.rawValue):0…\(kind.rawValue):\(candidates.count - 1))"
            throw .noSuchDevice(specifier, reason: "no \(kind == .video ? "camera" : "microphone") with index \(index); \(have)")
        }
        return candidates[index]
    }

    // MARK: Video

    private func videoDevices() -> [CaptureDevice] {
        let nodes = videoNodeNames()
        var devices: [CaptureDevice] = []
        // Nodes of one device share bus and card; the index among them keeps
        // derived unique IDs distinct and stable.
        var seen: [String: Int] = [:]
        for name in nodes {
            let path = "\(devRoot)/\(name)"
            do {
                let probe = try V4L2Probe.open(path, interface: v4l2, options: V4L2OpenOptions())
                guard probe.capability.isVideoCapture else { continue }
                let key = "\(probe.capability.busInfo)\u{0}\(probe.capability.card)"
                let index = seen[key, default: 0]
                seen[key] = index + 1
                devices.append(try describe(probe: probe, nodeName: name, index: index))
            } catch .permissionDenied(_, let reason) {
                devices.append(deniedVideoDevice(path: path, nodeName: name, reason: reason))
            } catch {
                // Vanished or broken nodes are not cameras anyone can use.
                continue
            }
        }
        return devices
    }

    /// `video0`, `video1` … in numeric order.
    private func videoNodeNames() -> [String] {
        guard let entries = try? Posix.directoryEntries(devRoot) else { return [] }
        var names: [(Int, String)] = []
        for name in entries {
            guard name.hasPrefix("video"), let number = Int(name.dropFirst(5)) else { continue }
            names.append((number, name))
        }
        return names.sorted { $0.0 < $1.0 }.map(\.1)
    }

    private func describe(probe: V4L2Probe, nodeName: String, index: Int) throws(DeviceError) -> CaptureDevice {
        let capability = probe.capability
        let uniqueID = byIDLink(for: probe.path)
            ?? UniqueID.derivedVideoID(busInfo: capability.busInfo, card: capability.card, index: index)
        let lights = TorchDiscovery(v4l2: v4l2, devRoot: devRoot, sysfsRoot: sysfs.root).lights(forDevice: probe.path, node: probe.node)
        return CaptureDevice(
            path: probe.path, uniqueID: uniqueID, localizedName: capability.card, mediaType: .video,
            driver: capability.driver, bus: capability.busInfo,
            modelID: sysfs.usbModelID(classDevice: "video4linux/\(nodeName)"),
            position: probe.position(), hasTorch: lights.hasTorch, hasFlash: lights.hasFlash,
            access: .authorized, backend: .v4l2(v4l2))
    }

    /// A camera this user may not open: what sysfs and /dev say about it.
    private func deniedVideoDevice(path: String, nodeName: String, reason: String) -> CaptureDevice {
        CaptureDevice(
            path: path, uniqueID: byIDLink(for: path) ?? "v4l2-node:\(nodeName)",
            localizedName: sysfs.attribute("class/video4linux/\(nodeName)/name") ?? nodeName,
            mediaType: .video, driver: "", bus: "",
            modelID: sysfs.usbModelID(classDevice: "video4linux/\(nodeName)"),
            position: .unspecified, hasTorch: false, hasFlash: false,
            access: .denied(reason: reason), backend: .v4l2(v4l2))
    }

    /// The name of the /dev/v4l/by-id link that udev made for this node, if any.
    private func byIDLink(for path: String) -> String? {
        let directoryPath = "\(devRoot)/v4l/by-id"
        guard let target = resolvedPath(path), let entries = try? Posix.directoryEntries(directoryPath) else { return nil }
        var matches: [String] = []
        for name in entries where resolvedPath("\(directoryPath)/\(name)") == target {
            matches.append(name)
        }
        return matches.sorted().first
    }

    private func nodeName(of canonicalPath: String) -> String {
        String(canonicalPath.split(separator: "/").last ?? Substring(canonicalPath))
    }

    // MARK: Audio

    private func audioDevices() -> [CaptureDevice] {
        let pcms = alsa.captureDevices()
        var devices = pcms.map { pcm in
            CaptureDevice(
                path: "hw:\(pcm.cardID),\(pcm.device)", uniqueID: UniqueID.audioID(cardID: pcm.cardID, device: pcm.device),
                localizedName: "\(pcm.cardName): \(pcm.pcmName)", mediaType: .audio, driver: pcm.driver,
                bus: sysfs.attribute("class/sound/card\(pcm.cardIndex)/device/modalias").map(busName(modalias:)) ?? "",
                modelID: sysfs.usbModelID(classDevice: "sound/card\(pcm.cardIndex)"),
                position: .unspecified, hasTorch: false, hasFlash: false,
                access: AccessCheck.access(toNode: "\(devRoot)/snd/pcmC\(pcm.cardIndex)D\(pcm.device)c"),
                backend: .alsa(alsa))
        }
        devices.append(defaultAudioDevice(access: devices.first?.access ?? .authorized))
        return devices
    }

    private func defaultAudioDevice(access: DeviceAccess) -> CaptureDevice {
        CaptureDevice(
            path: "default", uniqueID: UniqueID.audioDefaultID, localizedName: "Default capture device (ALSA 'default')",
            mediaType: .audio, driver: "", bus: "", modelID: nil, position: .unspecified,
            hasTorch: false, hasFlash: false, access: access, backend: .alsa(alsa))
    }

    /// An ALSA PCM name not in the list (`plughw:1,0`, a name from asoundrc):
    /// it is a capture device if it opens for capture.
    private func unlistedALSADevice(_ name: String) throws(DeviceError) -> CaptureDevice {
        do {
            _ = try alsa.captureFormats(name)
        } catch {
            throw DeviceError(openingALSA: name, error, interface: alsa)
        }
        return CaptureDevice(
            path: name, uniqueID: "alsa-pcm:\(name)", localizedName: name, mediaType: .audio, driver: "", bus: "",
            modelID: nil, position: .unspecified, hasTorch: false, hasFlash: false, access: .authorized, backend: .alsa(alsa))
    }

    /// `usb`, `pci`, `platform` … from a modalias such as `usb:v046Dp0825…`.
    private func busName(modalias: String) -> String {
        String(modalias.split(separator: ":").first ?? "")
    }
}
