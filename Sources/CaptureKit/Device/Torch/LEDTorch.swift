#if canImport(Glibc)
import Glibc
#endif

/// A light driven through an LED class device: `brightness` out of
/// `max_brightness` for the torch; `flash_strobe` and `flash_fault` where
/// the LED is a flash LED (LED flash class).
final class LEDTorch: TorchBackend {
    let name: String
    let directory: String
    let source: TorchSource
    let hasTorch = true
    let hasFlash: Bool

    /// Fault names the LED flash class prints, and whether each keeps the LED off.
    static let blockingFaults: Set<String> = [
        "led-over-voltage", "controller-over-temperature", "controller-short-circuit",
        "led-power-supply-over-current", "led-under-voltage", "led-over-temperature",
    ]

    /// The LED `name` under `sysfsRoot`/class/leds.
    init(name: String, sysfsRoot: String) throws(TorchError) {
        let leds = "\(sysfsRoot)/class/leds"
        guard !name.isEmpty, !name.contains("/"), name != ".", name != "..",
              Posix.isAccessible("\(leds)/\(name)/brightness") else {
            throw .noSuchLED(name, available: LEDTorch.names(sysfsRoot: sysfsRoot))
        }
        self.name = name
        self.directory = "\(leds)/\(name)"
        self.source = .led(name: name, directory: directory)
        self.hasFlash = Posix.isAccessible("\(leds)/\(name)/flash_strobe")
    }

    /// Every LED class device, sorted.
    static func names(sysfsRoot: String) -> [String] {
        ((try? Posix.directoryEntries("\(sysfsRoot)/class/leds")) ?? []).sorted()
    }

    /// LEDs whose function (the last part of devicename:colour:function)
    /// is torch or flash; torches first.
    static func cameraLights(sysfsRoot: String) -> [String] {
        let all = names(sysfsRoot: sysfsRoot)
        let torches = all.filter { $0.lowercased().hasSuffix(":torch") }
        let flashes = all.filter { $0.lowercased().hasSuffix(":flash") }
        return torches + flashes
    }

    func status() throws(TorchError) -> TorchStatus {
        let brightness = try readNumber("brightness")
        let maximum = max(try readNumber("max_brightness"), 1)
        let faults = (try? readText("flash_fault")).map { text in
            text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," }).map(String.init)
        } ?? []
        let available = !faults.contains { LEDTorch.blockingFaults.contains($0) }
        let level = Double(brightness) / Double(maximum)
        return TorchStatus(
            source: source, hasTorch: true, hasFlash: hasFlash, isTorchActive: brightness > 0, torchLevel: min(level, 1),
            isTorchAvailable: available, maxAvailableTorchLevel: available ? 1 : 0, faults: faults)
    }

    func turnOn(level: Double) throws(TorchError) {
        let maximum = max(try readNumber("max_brightness"), 1)
        // Any level above 0 lights the LED: at least 1.
        let value = min(max(Int64((level * Double(maximum)).rounded()), 1), maximum)
        try write("brightness", "\(value)\n")
    }

    func turnOff() throws(TorchError) {
        try write("brightness", "0\n")
    }

    func strobeFlash() throws(TorchError) {
        try write("flash_strobe", "1\n")
    }

    func lockForConfiguration() throws(TorchError) {}
    func unlockForConfiguration() {}

    // MARK: Files

    private func readText(_ attribute: String) throws(TorchError) -> String {
        let path = "\(directory)/\(attribute)"
        let descriptor: Int32
        do {
            descriptor = try Posix.open(path, O_RDONLY | O_CLOEXEC)
        } catch {
            throw fileError(path, error)
        }
        defer { try? Posix.close(descriptor, path: path) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count: Int
        do {
            count = try Posix.read(descriptor, into: &buffer, path: path)
        } catch {
            throw fileError(path, error)
        }
        return String(decoding: buffer.prefix(count), as: UTF8.self).trimmingWhitespace()
    }

    private func readNumber(_ attribute: String) throws(TorchError) -> Int64 {
        let text = try readText(attribute)
        guard let number = Int64(text) else {
            throw .io(file: "\(directory)/\(attribute)", SystemCallError(call: "read(\(directory)/\(attribute))", errno: EINVAL))
        }
        return number
    }

    private func write(_ attribute: String, _ text: String) throws(TorchError) {
        let path = "\(directory)/\(attribute)"
        let descriptor: Int32
        do {
            descriptor = try Posix.open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        } catch {
            throw fileError(path, error)
        }
        defer { try? Posix.close(descriptor, path: path) }
        let bytes = Array(text.utf8)
        let written: Int
        do {
            written = try Posix.write(descriptor, bytes, path: path)
        } catch {
            throw fileError(path, error)
        }
        if Int(written) != bytes.count {
            throw .io(file: path, SystemCallError(call: "write(\(path))", errno: EIO))
        }
    }

    private func fileError(_ path: String, _ error: SystemCallError) -> TorchError {
        switch error.errno {
        case EACCES, EPERM:
            return .permissionDenied(file: path, hint: LEDTorch.accessHint(path: path, led: name))
        case EBUSY:
            return .busy("LED \(name)", reason: "the LED is busy: a V4L2 flash sub-device that drives it is open; close the program using it, or use the camera's flash controls")
        case ENOENT:
            return .noSuchLED(name, available: [])
        default:
            return .io(file: path, error)
        }
    }

    /// How to get write access to an LED attribute: join the file's group
    /// when it is group-writable, else a udev rule that grants it.
    static func accessHint(path: String, led: String) -> String {
        let rule = "ACTION==\"add\", SUBSYSTEM==\"leds\", KERNEL==\"\(led)\", RUN+=\"/bin/chgrp video /sys%p/brightness\", RUN+=\"/bin/chmod g+w /sys%p/brightness\""
        if let info = try? Posix.stat(path), info.st_mode & 0o020 != 0, info.st_gid != 0,
           let group = getgrgid(info.st_gid).map({ String(cString: $0.pointee.gr_name) }) {
            return "add your user to group '\(group)' (sudo usermod -aG \(group) $USER, then log in again)"
        }
        return "sysfs LED files belong to root; grant a group write access with a udev rule such as '\(rule)' (in /etc/udev/rules.d/), join group video, or run as root"
    }
}
