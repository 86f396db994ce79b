import CaptureKit

/// The devices a recording command captures from, opened as the command line names them.
enum CaptureInputs {
    /// A camera as the command line names it, with what it is asked for and the text burned into its frames.
    typealias Camera = (specifier: String, request: CaptureVideoRequest, overlay: TextOverlay?)

    /// Opens the cameras (each with what it is asked for, and its overlay
    /// drawn into its frames before any output gets them), then the microphones;
    /// each holds its configuration lock while the session runs if `locksConfiguration`
    /// (as AVCaptureDevice's lockForConfiguration). One that fails closes those
    /// opened before it and is a command failure naming the device.
    static func open(cameras: [Camera], microphones: [String],
                     audioRequest: CaptureAudioRequest, realtime: Bool, locksConfiguration: Bool) throws -> [CaptureInput] {
        let discovery = DeviceDiscovery()
        var inputs: [CaptureInput] = []
        do throws(CaptureError) {
            for camera in cameras {
                let input = try CaptureInput(camera: camera.specifier, request: camera.request, realtime: realtime, discovery: discovery)
                if let overlay = camera.overlay {
                    input.videoFrameProcessor = TextOverlayRenderer(overlay: overlay, cameraName: input.source.localizedName)
                }
                inputs.append(input)
            }
            for microphone in microphones {
                inputs.append(try CaptureInput(microphone: microphone, request: audioRequest, realtime: realtime, discovery: discovery))
            }
        } catch {
            for input in inputs { input.close() }
            throw CommandFailure(error)
        }
        for input in inputs { input.locksConfiguration = locksConfiguration }
        return inputs
    }
}
