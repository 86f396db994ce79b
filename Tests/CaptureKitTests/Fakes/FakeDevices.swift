@testable import CaptureKit

extension FakeV4L2Camera {
    /// This camera as a capture device at `path`, reached through a fake
    /// V4L2 system that serves it (probing and streaming alike).
    func device(path: String = "/dev/fake-video0") -> CaptureDevice {
        let v4l2 = FakeV4L2()
        v4l2.cameras[path] = self
        return CaptureDevice(path: path, uniqueID: "fake:\(path)", localizedName: "Fake Camera", mediaType: .video,
                             driver: "fake", bus: "fake", modelID: nil, position: .unspecified, hasTorch: false,
                             hasFlash: false, access: .authorized, backend: .v4l2(v4l2))
    }
}

extension FakeMicrophone {
    /// This microphone as a capture device named `name`, reached through a fake ALSA system.
    func device(name: String = "hw:Fake,0") -> CaptureDevice {
        var alsa = FakeALSA()
        alsa.microphones[name] = self
        return CaptureDevice(path: name, uniqueID: "fake:\(name)", localizedName: "Fake Microphone", mediaType: .audio,
                             driver: "fake", bus: "fake", modelID: nil, position: .unspecified, hasTorch: false,
                             hasFlash: false, access: .authorized, backend: .alsa(alsa))
    }
}
