/// Turns a device as a user names it into a capture source: a virtual
/// device (`test-pattern`, `test-tone[:HZ]`, `file:PATH`), or a real one
/// found through discovery (path, unique ID, `video:N`, `audio:N`).
public enum CaptureSourceFactory {
    /// A video source for `specifier`.
    public static func videoSource(_ specifier: String, request: CaptureVideoRequest, realtime: Bool = true,
                                   discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) -> any CaptureSource {
        if let virtual = try VirtualDevice.parse(specifier) {
            guard virtual.mediaType == .video else {
                throw .device(.notACaptureDevice(specifier, reason: "not a video capture device (it is a virtual microphone)"))
            }
            return virtual.makeSource(video: request, realtime: realtime)
        }
        let device: CaptureDevice
        do { device = try discovery.resolve(specifier, expecting: .video) } catch { throw .device(error) }
        return V4L2CaptureSource(device: device, request: request)
    }

    /// An audio source for `specifier`.
    public static func audioSource(_ specifier: String, request: CaptureAudioRequest, realtime: Bool = true,
                                   discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) -> any CaptureSource {
        if let virtual = try VirtualDevice.parse(specifier) {
            guard virtual.mediaType == .audio else {
                throw .device(.notACaptureDevice(specifier, reason: "not an audio capture device (it is a virtual camera)"))
            }
            return virtual.makeSource(audio: request, realtime: realtime)
        }
        let device: CaptureDevice
        do { device = try discovery.resolve(specifier, expecting: .audio) } catch { throw .device(error) }
        return ALSACaptureSource(device: device, request: request)
    }
}
