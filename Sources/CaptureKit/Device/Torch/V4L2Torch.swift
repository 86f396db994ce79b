/// A light driven by V4L2 flash controls (on the camera node or a flash
/// sub-device): V4L2_CID_FLASH_LED_MODE none/flash/torch, the torch
/// intensity, the strobe, and the fault bits.
final class V4L2Torch: TorchBackend {
    let controls: DeviceControls
    let source: TorchSource
    let hasTorch: Bool
    let hasFlash: Bool

    // Menu entries of V4L2_CID_FLASH_LED_MODE.
    static let modeNone: Int64 = 0
    static let modeFlash: Int64 = 1
    static let modeTorch: Int64 = 2

    /// V4L2_FLASH_FAULT_* bits and their names; `blocking` faults keep the LED off.
    static let faults: [(bit: Int64, name: String, blocking: Bool)] = [
        (0x001, "over-voltage", true),
        (0x002, "timeout", false),
        (0x004, "over-temperature", true),
        (0x008, "short-circuit", true),
        (0x010, "over-current", true),
        (0x020, "indicator", false),
        (0x040, "under-voltage", true),
        (0x080, "input-voltage", false),
        (0x100, "led-over-temperature", true),
    ]

    /// The light on `controls`, or nil when it has no flash controls.
    init?(controls: DeviceControls, isSubdevice: Bool) {
        let mode = controls.usable(ControlID.flashLEDMode)
        let strobe = controls.usable(ControlID.flashStrobe)
        let torch = mode?.menuItem(index: V4L2Torch.modeTorch) != nil || (mode.map { $0.minimum <= 2 && $0.maximum >= 2 && $0.menu.isEmpty } ?? false)
        let flash = mode?.menuItem(index: V4L2Torch.modeFlash) != nil || strobe != nil
        guard torch || flash else { return nil }
        self.controls = controls
        self.source = .v4l2(path: controls.path, isSubdevice: isSubdevice)
        self.hasTorch = torch
        self.hasFlash = flash
    }

    func status() throws(TorchError) -> TorchStatus {
        do {
            let mode = try controls.control(id: ControlID.flashLEDMode)?.value?.integer ?? V4L2Torch.modeNone
            let intensity = try controls.control(id: ControlID.flashTorchIntensity)
            var level = 0.0
            if mode == V4L2Torch.modeTorch {
                if let intensity, let value = intensity.value?.integer, intensity.maximum > 0 {
                    level = Double(value) / Double(intensity.maximum)
                } else {
                    level = 1
                }
            }
            let faultBits = try controls.control(id: ControlID.flashFault)?.value?.integer ?? 0
            let present = V4L2Torch.faults.filter { faultBits & $0.bit != 0 }
            let available = hasTorch && !present.contains { $0.blocking }
            return TorchStatus(
                source: source, hasTorch: hasTorch, hasFlash: hasFlash, isTorchActive: level > 0, torchLevel: level,
                isTorchAvailable: available, maxAvailableTorchLevel: available ? 1 : 0, faults: present.map(\.name))
        } catch {
            throw .control(error)
        }
    }

    func turnOn(level: Double) throws(TorchError) {
        do {
            if let intensity = controls.usable(ControlID.flashTorchIntensity) {
                let wanted = Int64((level * Double(intensity.maximum)).rounded())
                // Never below the smallest current that lights the LED.
                let value = controls.snap(max(wanted, max(intensity.minimum, 1)), intensity)
                try controls.setRaw(ControlID.flashTorchIntensity, value, name: "torch intensity")
            }
            try controls.setRaw(ControlID.flashLEDMode, V4L2Torch.modeTorch, name: "flash LED mode")
        } catch {
            throw .control(error)
        }
    }

    func turnOff() throws(TorchError) {
        do {
            try controls.setRaw(ControlID.flashLEDMode, V4L2Torch.modeNone, name: "flash LED mode")
        } catch {
            throw .control(error)
        }
    }

    func strobeFlash() throws(TorchError) {
        do {
            if let mode = controls.usable(ControlID.flashLEDMode), mode.menuItem(index: V4L2Torch.modeFlash) != nil {
                try controls.setRaw(ControlID.flashLEDMode, V4L2Torch.modeFlash, name: "flash LED mode")
            }
            if let sourceControl = controls.usable(ControlID.flashStrobeSource), sourceControl.value?.integer != 0 {
                try controls.setRaw(ControlID.flashStrobeSource, 0, name: "flash strobe source")
            }
            try controls.setRaw(ControlID.flashStrobe, 1, name: "flash strobe")
        } catch {
            throw .control(error)
        }
    }

    func lockForConfiguration() throws(TorchError) {
        do {
            try controls.lockForConfiguration()
        } catch {
            throw .control(error)
        }
    }

    func unlockForConfiguration() {
        controls.unlockForConfiguration()
    }
}
