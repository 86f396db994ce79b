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
    var shared: TextOverlay? { overlay.map { TextOverlay(text: $0, position: overlayPosition ?? .topLeft) } }

    /// Checks the texts (`--overlay` and each camera's `overlay=`) and that they are drawn at all.
    func validate(cameras: [CameraArgument], copiesVideo: Bool) throws {
        let texts = ([overlay] + cameras.map(\.overlay)).compactMap { $0 }
        if overlayPosition != nil && texts.isEmpty {
            throw ValidationError("--overlay-position places the overlay's text; give --overlay TEXT (or overlay=TEXT on a --video) too")
        }
        if copiesVideo && !texts.isEmpty {
            throw ValidationError("--video-codec copy writes the camera's frames untouched and the overlay draws into frames before they are encoded; leave out one of them")
        }
        for text in texts {
            let option = text == overlay ? "--overlay" : "overlay="
            if text.isEmpty { throw ValidationError("\(option) is empty; give the text to draw, such as --overlay '%Y-%m-%d %H:%M:%S'") }
            if !text.unicodeScalars.allSatisfy({ (32...126).contains($0.value) }) {
                throw ValidationError("\(option) '\(text)': the overlay font has printable ASCII only; write the text without other characters")
            }
            if text.utf8.count > 200 { throw ValidationError("\(option) is \(text.utf8.count) characters long; a frame shows at most 200") }
        }
    }
}
