import ArgumentParser
import CaptureKit

extension TextOverlay.Position: ExpressibleByArgument {}

/// Text burned into the cameras' frames before anything is encoded, for
/// `record` and `serve`: `--overlay` for every camera (a `--video DEV,overlay=TEXT`
/// has its own) and `--overlay-position`.
struct OverlayOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Burn TEXT into every frame (a dark box, light text): strftime fields at the frame's capture time in local time, %f its milliseconds, {camera} the camera's name; a --video DEV,overlay=TEXT has its own.", valueName: "text"))
    var overlay: String?

    @Option(name: .long, help: ArgumentHelp("The corner of the overlay: top-left (default), top-right, bottom-left or bottom-right.", valueName: "corner"))
    var overlayPosition: TextOverlay.Position?

    /// The overlay of a camera with no text of its own.
    var shared: TextOverlay? { RecordingOptions.overlay(overlay, position: overlayPosition) }

    /// Checks the texts (`--overlay` and each camera's `overlay=`) and that they are drawn at all.
    func validate(cameras: [CameraArgument], copiesVideo: Bool) throws {
        do throws(SettingError) {
            try RecordingOptions.validateOverlay(overlay, position: overlayPosition, cameras: cameras, copiesVideo: copiesVideo)
        } catch {
            throw ValidationError(error.message(.commandLine))
        }
    }
}
