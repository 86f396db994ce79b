/// Whether a camera node has a torch or a flash, from its V4L2 flash controls.
enum LightDetection {
    struct Lights: Equatable {
        var hasTorch: Bool
        var hasFlash: Bool
    }

    /// V4L2_CID_FLASH_LED_MODE's menu runs none (0), flash (1), torch (2);
    /// a strobe control also means a flash.
    static func detect(node: any V4L2Node) -> Lights {
        let mode = (try? node.queryControl(id: V4L2ControlID.flashLEDMode)).flatMap { $0 }
        let strobe = (try? node.queryControl(id: V4L2ControlID.flashStrobe)).flatMap { $0 }
        let usableMode = mode.flatMap { $0.isDisabled ? nil : $0 }
        return Lights(
            hasTorch: usableMode.map { $0.minimum <= 2 && $0.maximum >= 2 } ?? false,
            hasFlash: (usableMode.map { $0.minimum <= 1 && $0.maximum >= 1 } ?? false) || (strobe.map { !$0.isDisabled } ?? false))
    }
}
