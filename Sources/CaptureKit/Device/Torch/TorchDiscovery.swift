#if canImport(Glibc)
import Glibc
#endif

/// Finds the light of a camera, in order:
/// 1. V4L2 flash controls on the camera's own node;
/// 2. a flash sub-device in the camera's media-controller graph;
/// 3. an LED class device whose function is torch or flash
///    (`/sys/class/leds/*:torch`, then `*:flash`). Linux does not say which
///    camera such an LED lights, so it serves every camera without a light
///    of its own.
///
/// The single source of `CaptureDevice.hasTorch` and `hasFlash`, and of `capctl set-torch`.
package struct TorchDiscovery: Sendable {
    let v4l2: any V4L2Interface
    let mediaController: any MediaControllerInterface
    let devRoot: String
    let sysfsRoot: String

    /// Discovery of this system's lights.
    package init() {
        self.init(v4l2: KernelV4L2())
    }

    init(v4l2: any V4L2Interface = KernelV4L2(), mediaController: any MediaControllerInterface = KernelMediaController(),
                devRoot: String = "/dev", sysfsRoot: String = "/sys") {
        self.v4l2 = v4l2
        self.mediaController = mediaController
        self.devRoot = devRoot
        self.sysfsRoot = sysfsRoot
    }

    /// The light of the camera at `path`. Throws `.noLightFound` when none of the
    /// sources has one, saying what was looked at.
    package func torch(forDevice path: String) throws(TorchError) -> Torch {
        try torch(forDevice: path, clock: MonotonicControlClock())
    }

    func torch(forDevice path: String, clock: any ControlClock) throws(TorchError) -> Torch {
        let controls: DeviceControls
        do {
            controls = try DeviceControls.open(path, interface: v4l2, clock: clock)
        } catch {
            throw .control(error)
        }
        if let light = V4L2Torch(controls: controls, isSubdevice: false) {
            return Torch(backend: light)
        }
        for subdevice in flashSubdevicePaths(forVideoNode: path) {
            if let subdeviceControls = try? DeviceControls.open(subdevice, interface: v4l2, clock: clock),
               let light = V4L2Torch(controls: subdeviceControls, isSubdevice: true) {
                return Torch(backend: light)
            }
        }
        if let name = LEDTorch.cameraLights(sysfsRoot: sysfsRoot).first {
            return Torch(backend: try LEDTorch(name: name, sysfsRoot: sysfsRoot))
        }
        throw .noLightFound(path, reason: "it has no V4L2 flash controls, no flash sub-device in its media graph, and there is no LED class torch or flash (\(sysfsRoot)/class/leds/*:torch, *:flash)")
    }

    /// The LED class device `name` as a torch (any LED: `input0::capslock` too).
    package func torch(led name: String) throws(TorchError) -> Torch {
        Torch(backend: try LEDTorch(name: name, sysfsRoot: sysfsRoot))
    }

    /// The first light of the system: that of the first of `cameras` with
    /// one of its own, else the first LED class torch or flash.
    package func defaultTorch(cameras: [String]) throws(TorchError) -> Torch {
        try defaultTorch(cameras: cameras, clock: MonotonicControlClock())
    }

    func defaultTorch(cameras: [String], clock: any ControlClock) throws(TorchError) -> Torch {
        for camera in cameras {
            guard let controls = try? DeviceControls.open(camera, interface: v4l2, clock: clock) else { continue }
            if let light = V4L2Torch(controls: controls, isSubdevice: false) { return Torch(backend: light) }
            for subdevice in flashSubdevicePaths(forVideoNode: camera) {
                if let subdeviceControls = try? DeviceControls.open(subdevice, interface: v4l2, clock: clock),
                   let light = V4L2Torch(controls: subdeviceControls, isSubdevice: true) {
                    return Torch(backend: light)
                }
            }
        }
        if let name = LEDTorch.cameraLights(sysfsRoot: sysfsRoot).first {
            return Torch(backend: try LEDTorch(name: name, sysfsRoot: sysfsRoot))
        }
        let looked = cameras.isEmpty ? "there is no camera" : "no camera (\(cameras.joined(separator: ", "))) has flash controls"
        throw .noLightFound("this system", reason: "\(looked), and there is no LED class torch or flash under \(sysfsRoot)/class/leds")
    }

    /// Whether the camera at `path`, open as `node`, has a torch and a flash:
    /// the same order of sources as `torch(forDevice:)`, asking only.
    func lights(forDevice path: String, node: any V4L2Node) -> (hasTorch: Bool, hasFlash: Bool) {
        var lights = TorchDiscovery.flashControls(of: node)
        if !lights.hasTorch || !lights.hasFlash {
            for subdevice in flashSubdevicePaths(forVideoNode: path) {
                guard let subdeviceNode = try? v4l2.open(subdevice, options: V4L2OpenOptions()) else { continue }
                let found = TorchDiscovery.flashControls(of: subdeviceNode)
                lights.hasTorch = lights.hasTorch || found.hasTorch
                lights.hasFlash = lights.hasFlash || found.hasFlash
            }
        }
        if !lights.hasTorch && !lights.hasFlash {
            for name in LEDTorch.cameraLights(sysfsRoot: sysfsRoot) {
                lights.hasTorch = true
                if Posix.isAccessible("\(sysfsRoot)/class/leds/\(name)/flash_strobe") || name.lowercased().hasSuffix(":flash") {
                    lights.hasFlash = true
                }
            }
        }
        return lights
    }

    /// Torch and flash from V4L2_CID_FLASH_LED_MODE (none 0, flash 1,
    /// torch 2: the menu entries it lists, or its range where it lists none)
    /// and V4L2_CID_FLASH_STROBE.
    static func flashControls(of node: any V4L2Node) -> (hasTorch: Bool, hasFlash: Bool) {
        let mode = (try? node.queryControl(id: ControlID.flashLEDMode)).flatMap { $0 }.flatMap { $0.isDisabled ? nil : $0 }
        let strobe = (try? node.queryControl(id: ControlID.flashStrobe)).flatMap { $0 }.flatMap { $0.isDisabled ? nil : $0 }
        var torch = false
        var flash = strobe != nil
        if let mode {
            let entries = (mode.minimum...max(mode.minimum, mode.maximum)).filter { index in
                index >= 0 && ((try? node.queryMenuItem(controlID: mode.id, index: UInt32(index))) ?? nil) != nil
            }
            if entries.isEmpty {
                torch = mode.minimum <= 2 && mode.maximum >= 2
                flash = flash || (mode.minimum <= 1 && mode.maximum >= 1)
            } else {
                torch = entries.contains(2)
                flash = flash || entries.contains(1)
            }
        }
        return (torch, flash)
    }

    /// The /dev paths of the flash sub-devices in the media graph that
    /// holds the video node at `path`.
    package func flashSubdevicePaths(forVideoNode path: String) -> [String] {
        guard let videoNumber = mediaController.deviceNumber(of: path) else { return [] }
        var paths: [String] = []
        for media in mediaNodes() {
            guard let topology = try? mediaController.topology(of: media) else { continue }
            for number in topology.flashSubdevices(forVideoNode: videoNumber) {
                if let node = nodePath(for: number) { paths.append(node) }
            }
        }
        return paths
    }

    /// `media0`, `media1` … under the /dev root.
    private func mediaNodes() -> [String] {
        let names = (try? Posix.directoryEntries(devRoot)) ?? []
        return names.filter { $0.hasPrefix("media") && Int($0.dropFirst(5)) != nil }.map { "\(devRoot)/\($0)" }.sorted()
    }

    /// The /dev path of a character device: its name from sysfs
    /// (`dev/char/M:m/uevent`, DEVNAME), else a search of the /dev root's sub-devices.
    func nodePath(for number: DeviceNumber) -> String? {
        if let uevent = Sysfs(root: sysfsRoot).attributeLines("dev/char/\(number)/uevent"),
           let line = uevent.first(where: { $0.hasPrefix("DEVNAME=") }) {
            return "\(devRoot)/\(line.dropFirst("DEVNAME=".count))"
        }
        let names = (try? Posix.directoryEntries(devRoot)) ?? []
        for name in names where name.hasPrefix("v4l-subdev") {
            if mediaController.deviceNumber(of: "\(devRoot)/\(name)") == number { return "\(devRoot)/\(name)" }
        }
        return nil
    }
}

extension Sysfs {
    /// Every line of a sysfs attribute relative to the root, or nil when it cannot be read.
    func attributeLines(_ relativePath: String) -> [String]? {
        guard let bytes = try? Posix.readFile("\(root)/\(relativePath)", limit: 64 * 1024) else { return nil }
        let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if text.hasSuffix("\n") { lines.removeLast() }
        return lines
    }
}
