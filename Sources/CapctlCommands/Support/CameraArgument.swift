import ArgumentParser
import CaptureKit

/// One `--video` of `record`: a camera as `DeviceArgument` names it, with
/// its own capture options after commas, `DEV[,size=WxH][,fps=N][,pixel-format=F]`
/// (such as `/dev/video2,size=1280x720,fps=30`), and last `,overlay=TEXT`,
/// which takes the rest of the argument, commas and all. Options it leaves
/// out come from `--size`, `--fps`, `--pixel-format` and `--overlay`. Only
/// those names are taken as options, so a `file:PATH` whose name holds
/// commas stays whole.
package struct CameraArgument: ExpressibleByArgument, CustomStringConvertible {
    let device: DeviceArgument
    let size: FrameSizeArgument?
    let fps: RateArgument?
    let pixelFormat: String?
    /// The text to burn into this camera's frames (`overlay=`, always last).
    let overlay: String?
    /// What is wrong with an option, reported by `validate()` (an
    /// `ExpressibleByArgument` can only say "invalid").
    let problem: String?

    static let optionNames = ["size", "fps", "pixel-format"]

    package init?(argument whole: String) {
        // overlay= is last and takes the rest: its text may hold commas.
        var argument = whole
        if let range = whole.firstRange(of: ",overlay=") {
            argument = String(whole[..<range.lowerBound])
            overlay = String(whole[range.upperBound...])
        } else {
            overlay = nil
        }
        var parts = argument.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        var options: [(String, String)] = []
        var size: FrameSizeArgument?, fps: RateArgument?, pixelFormat: String?, problem: String?
        func option(_ part: String) -> (String, String)? {
            guard let equals = part.firstIndex(of: "="), Self.optionNames.contains(String(part[..<equals])) else { return nil }
            return (String(part[..<equals]), String(part[part.index(after: equals)...]))
        }
        if argument.hasPrefix("file:") {
            // A file's name may hold commas: options are taken from the end while they name one of ours.
            while parts.count > 1, let last = parts.last.flatMap(option) {
                options.insert(last, at: 0)
                parts.removeLast()
            }
        } else {
            // A camera's node or name holds no comma: everything after one
            // is an option, and one that is not ours is a mistake to name,
            // not part of a device that does not exist.
            for part in parts.dropFirst() {
                if let parsed = option(part) {
                    options.append(parsed)
                } else {
                    problem = problem ?? "'\(part)' is not a camera option: after the device come size=WxH, fps=N, pixel-format=F and last overlay=TEXT, such as video:0,size=1280x720,fps=30"
                }
            }
            parts = [parts[0]]
        }
        let names = options.map(\.0)
        if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            problem = problem ?? "\(repeated)= is given twice for one camera; give it once"
        }
        guard let device = DeviceArgument(argument: parts.joined(separator: ",")) else { return nil }
        self.device = device
        for (name, value) in options {
            switch name {
            case "size":
                size = FrameSizeArgument(argument: value)
                if size == nil { problem = problem ?? "size=\(value) is not WxH, such as size=1280x720" }
            case "fps":
                fps = RateArgument(argument: value)
                if fps == nil { problem = problem ?? "fps=\(value) is not a rate, such as fps=30 or fps=30000/1001" }
            default:
                pixelFormat = value
                if value.isEmpty || value.count > 16 { problem = problem ?? "pixel-format=\(value) is not a fourcc such as YUYV or MJPG" }
            }
        }
        (self.size, self.fps, self.pixelFormat, self.problem) = (size, fps, pixelFormat, problem)
    }

    package var description: String { device.specifier }

    /// This camera's overlay: its own text, else `shared`'s, placed as `shared` says.
    func overlay(over shared: OverlayOptions) -> TextOverlay? {
        RecordingOptions.overlay(overlay ?? shared.overlay, position: shared.overlayPosition)
    }

    package static var defaultCompletionKind: CompletionKind { .file() }

    /// The capture request for this camera: its own options over the shared ones.
    func request(over shared: CaptureVideoRequest) -> CaptureVideoRequest {
        var request = shared
        if let size {
            request.width = size.width
            request.height = size.height
        }
        if let fps { request.framesPerSecond = fps.value }
        if let pixelFormat { request.pixelFormat = pixelFormat }
        return request
    }
}
