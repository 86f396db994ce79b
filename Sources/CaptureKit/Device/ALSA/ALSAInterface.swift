/// The seam between CaptureKit and ALSA, so tests can replay a recorded
/// sound system through a fake; `KernelALSA` is the real implementation.
protocol ALSAInterface: Sendable {
    /// Every PCM device on every card that has a capture stream.
    func captureDevices() -> [ALSACaptureDescription]
    /// What the PCM named `name` accepts for capture, one entry per sample
    /// format. Throws the error of `snd_pcm_open` (errno) when it cannot be opened.
    func captureFormats(_ name: String) throws(SystemCallError) -> [AudioFormat]
    /// Whether a sound card with this number or ID (`1`, `Loopback`) is present.
    func cardExists(_ card: String) -> Bool
    /// Opens the PCM named `name` for capture, non-blocking (the capture
    /// loop waits in poll(), and opening never waits for a device another
    /// process holds). Throws the error of `snd_pcm_open` (errno).
    func openCapture(_ name: String) throws(SystemCallError) -> any ALSACapturePCM
}

/// One PCM device with a capture stream, as the card's control interface reports it.
struct ALSACaptureDescription: Sendable, Hashable {
    var cardIndex: Int32
    /// The card's stable identifier, such as `Loopback` or `PCH`.
    var cardID: String
    var cardName: String
    var driver: String
    var device: Int32
    var pcmName: String
    /// How many capture subdevices the device has.
    var subdevices: UInt32

    init(cardIndex: Int32, cardID: String, cardName: String, driver: String, device: Int32, pcmName: String, subdevices: UInt32) {
        self.cardIndex = cardIndex
        self.cardID = cardID
        self.cardName = cardName
        self.driver = driver
        self.device = device
        self.pcmName = pcmName
        self.subdevices = subdevices
    }
}
