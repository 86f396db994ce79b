/// A device as a user names it, resolved: a real one found through
/// discovery, or a virtual one made in software.
package enum NamedDevice: Sendable {
    case hardware(CaptureDevice)
    case virtual(VirtualDevice)

    package var mediaType: MediaType {
        switch self {
        case .hardware(let device): return device.mediaType
        case .virtual(let device): return device.mediaType
        }
    }
}

/// Turns a device as a user names it into a capture source: a virtual
/// device (`test-pattern`, `test-tone[:HZ]`, `file:PATH`), or a real one
/// found through discovery (path, unique ID, `video:N`, `audio:N`).
enum CaptureSourceFactory {
    /// The device `specifier` names: a virtual one (`test-pattern`,
    /// `virtual:test-tone`, `file:PATH` …), else what discovery finds. With
    /// `mediaType`, a device of the other kind is refused as not a capture
    /// device of that kind. Every command that takes a device resolves it here.
    static func device(_ specifier: String, expecting mediaType: MediaType? = nil,
                              discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) -> NamedDevice {
        if let virtual = try VirtualDevice.parse(specifier) {
            if let mediaType, virtual.mediaType != mediaType {
                let reason = mediaType == .video ? "not a video capture device (it is a virtual microphone)"
                    : "not an audio capture device (it is a virtual camera)"
                throw .device(.notACaptureDevice(specifier, reason: reason))
            }
            return .virtual(virtual)
        }
        do { return .hardware(try discovery.resolve(specifier, expecting: mediaType)) } catch { throw .device(error) }
    }

    /// A video source for `specifier`.
    static func videoSource(_ specifier: String, request: CaptureVideoRequest, realtime: Bool = true,
                                   discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) -> any CaptureSource {
        switch try device(specifier, expecting: .video, discovery: discovery) {
        case .virtual(let virtual): return virtual.makeSource(video: request, realtime: realtime)
        case .hardware(let device): return V4L2CaptureSource(device: device, request: request)
        }
    }

    /// An audio source for `specifier`.
    static func audioSource(_ specifier: String, request: CaptureAudioRequest, realtime: Bool = true,
                                   discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) -> any CaptureSource {
        switch try device(specifier, expecting: .audio, discovery: discovery) {
        case .virtual(let virtual): return virtual.makeSource(audio: request, realtime: realtime)
        case .hardware(let device): return ALSACaptureSource(device: device, request: request)
        }
    }
}

extension CaptureInput {
    /// An input for the camera `name` names as capctl does: a device node
    /// (`/dev/video0`), a unique ID, `video:N`, or a virtual camera
    /// (`test-pattern`, `file:PATH`), capturing what `request` asks for.
    /// `realtime` false lets a virtual camera run as fast as it is read.
    /// Throws when no such camera exists (or it is a microphone).
    public convenience init(camera name: String, request: CaptureVideoRequest = CaptureVideoRequest(), realtime: Bool = true,
                            discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) {
        self.init(source: try CaptureSourceFactory.videoSource(name, request: request, realtime: realtime, discovery: discovery))
    }

    /// An input for the microphone `name` names: an ALSA name (`default`,
    /// `hw:1,0`), a unique ID, `audio:N`, or a virtual one (`test-tone[:HZ]`,
    /// `file:PATH`).
    public convenience init(microphone name: String, request: CaptureAudioRequest = CaptureAudioRequest(), realtime: Bool = true,
                            discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) {
        self.init(source: try CaptureSourceFactory.audioSource(name, request: request, realtime: realtime, discovery: discovery))
    }
}

extension NamedDevice {
    /// The device `name` names as capctl does: a virtual one
    /// (`test-pattern`, `test-tone[:HZ]`, `file:PATH`), else what discovery
    /// finds (node, ALSA name, unique ID, `video:N`, `audio:N`). With
    /// `mediaType`, a device of the other kind is refused.
    package init(_ name: String, expecting mediaType: MediaType? = nil, discovery: DeviceDiscovery = DeviceDiscovery()) throws(CaptureError) {
        self = try CaptureSourceFactory.device(name, expecting: mediaType, discovery: discovery)
    }
}
