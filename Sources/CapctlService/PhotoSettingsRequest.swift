import CapctlCommands
import CaptureKit

/// A photo request as `POST /photos` gives it, checked: `snap`'s settings as
/// JSON keys (`format`, `quality`, `count`, `interval`, `flash`, `file` as
/// snap's OUT, a name inside the service's folder) and `camera`, the session
/// input to take them from. Every check happens here, before a photo is
/// asked for, so that a refused request writes nothing.
struct PhotoSettingsRequest: Sendable {
    /// The camera's input id and the input.
    var camera: (id: String, input: CaptureInput)
    var format: PhotoFileFormat
    var quality: Int?
    var count = 1
    var interval = MediaTime.zero
    var flash = PhotoFlashMode.off
    /// The file name template as given (relative to the folder), and the template it makes.
    var file: (name: String, template: FileNameTemplate)?
    let folder: ServiceFolder

    /// The most photos one request takes.
    static let maximumCount = 100
    /// The longest a request may take photos for (count − 1 intervals): the
    /// HTTP request waits for the last photo.
    static let maximumSpan = MediaTime(value: 600, timescale: 1)

    /// Keys snap has that the service does not take, and why.
    static let refused: [String: String] = [
        "video": "the service's cameras are chosen with 'camera', a session input id (GET /devices)",
        "live": "live photos are not taken by the service",
        "liveFormat": "live photos are not taken by the service",
        "warmup": "the service's cameras are already running",
        "size": "the cameras' sizes are set when the service starts (capctl serve --size)",
        "pixelFormat": "the cameras' formats are set when the service starts (capctl serve --pixel-format)",
        "out": "the file to write is 'file', a name inside the service's folder",
        "overwrite": "the service never overwrites a file; choose a new name",
    ]

    /// Reads and checks `settings`; `inputs` are the session's, numbered from 0.
    init(_ settings: [String: JSONValue], inputs: [CaptureInput], folder: ServiceFolder) throws(ServiceError) {
        for key in settings.keys.sorted() where !["format", "quality", "count", "interval", "flash", "file", "camera"].contains(key) {
            if let reason = Self.refused[key] { throw ServiceError(.badRequest, "\(key) is not taken here: \(reason)") }
            throw ServiceError(.badRequest, "unknown setting '\(key)'; a photo takes format, quality, count, interval, flash, file and camera")
        }
        self.folder = folder
        camera = try Self.camera(settings["camera"], inputs: inputs)
        if let value = settings["file"] {
            guard case .string(let name) = value else {
                throw ServiceError(.badRequest, "file must be a string, a name inside the service's folder such as 'shot-%3n.jpg'")
            }
            _ = try folder.path(for: name)
            let template: FileNameTemplate
            do { template = try FileNameTemplate(name) } catch {
                throw ServiceError(.badRequest, "file '\(name)': \(error.description)")
            }
            file = (name, template)
        }
        if let value = settings["format"] {
            guard case .string(let text) = value, let chosen = PhotoFileFormat(rawValue: text.lowercased()) else {
                throw ServiceError(.badRequest, "format must be jpeg, png or raw, not \(value.word.map { "'\($0)'" } ?? value.kindName)")
            }
            format = chosen
        } else if let file {
            guard let implied = PhotoFileFormat(path: file.name) else {
                throw ServiceError(.badRequest, "cannot tell the photo format from '\(file.name)'; end it in .jpg, .png or .raw, or give format")
            }
            format = implied
        } else {
            format = .jpeg
        }
        if let value = settings["quality"] {
            let quality = try Self.integer(value, "quality", in: 1...100, hint: "a JPEG quality from 1 to 100")
            guard format == .jpeg else { throw ServiceError(.badRequest, "quality applies to JPEG photos, not \(format.rawValue)") }
            self.quality = quality
        }
        if let value = settings["count"] {
            count = try Self.integer(value, "count", in: 1...Self.maximumCount, hint: "a number of photos from 1 to \(Self.maximumCount)")
        }
        if let value = settings["interval"] {
            guard let word = value.word, let parsed = IntervalArgument(argument: word) else {
                throw ServiceError(.badRequest, "interval must be 0 or a positive time such as 2, '500ms' or '1m', not \(value.word.map { "'\($0)'" } ?? value.kindName)")
            }
            interval = parsed.time
        }
        if interval > .zero {
            guard count >= 2 else { throw ServiceError(.badRequest, "interval needs count 2 or more") }
            guard interval.seconds * Double(count - 1) <= Self.maximumSpan.seconds else {
                throw ServiceError(.badRequest, "count \(count) at interval \(interval.seconds) s takes longer than \(Int(Self.maximumSpan.seconds)) s; for a longer time-lapse, send one request per photo")
            }
        }
        if let value = settings["flash"] {
            guard case .string(let text) = value, let mode = PhotoFlashMode(rawValue: text.lowercased()) else {
                throw ServiceError(.badRequest, "flash must be off, on or auto, not \(value.word.map { "'\($0)'" } ?? value.kindName)")
            }
            flash = mode
        }
        if count > 1 && file == nil {
            throw ServiceError(.badRequest, "a burst of \(count) photos needs file, a name template inside the service's folder such as 'shot-%3n.jpg'; without file, one photo is answered as the image itself")
        }
    }

    /// The session input `value` names (default: the first camera).
    private static func camera(_ value: JSONValue?, inputs: [CaptureInput]) throws(ServiceError) -> (id: String, input: CaptureInput) {
        guard let value else {
            guard let index = inputs.firstIndex(where: { $0.mediaType == .video }) else {
                throw ServiceError(.badRequest, "the service has no camera to take photos with")
            }
            return (String(index), inputs[index])
        }
        guard let id = value.word, let index = Int(id), inputs.indices.contains(index) else {
            throw ServiceError(.badRequest, "camera must be a device id GET /devices lists (from 0), not \(value.word.map { "'\($0)'" } ?? value.kindName)")
        }
        guard inputs[index].mediaType == .video else { throw ServiceError(.badRequest, "device \(id) is a microphone, not a camera") }
        return (id, inputs[index])
    }

    private static func integer(_ value: JSONValue, _ key: String, in range: ClosedRange<Int>, hint: String) throws(ServiceError) -> Int {
        let number: Int?
        switch value {
        case .integer(let integer): number = Int(exactly: integer)
        case .number(let double): number = double == double.rounded() ? Int(exactly: double) : nil
        case .string(let text): number = Int(text)
        default: number = nil
        }
        guard let number, range.contains(number) else {
            throw ServiceError(.badRequest, "\(key) \(value.word ?? value.kindName) is out of range; give \(hint)")
        }
        return number
    }

    /// The name inside the folder of photo `number` (from 1) taken now, as
    /// snap names them: without %n in a burst, OUT, OUT-2, OUT-3 …
    func name(number: Int) -> String? {
        guard let template = file?.template else { return nil }
        let name = template.path(number: number)
        return template.hasCounter || count == 1 ? name : FileNameTemplate.numbered(name, number: number)
    }

    /// The path of photo `number` inside the folder, checked as every name
    /// a request gives (a time field such as %D could add a folder).
    func path(number: Int) throws(ServiceError) -> String? {
        guard let name = name(number: number) else { return nil }
        return try folder.path(for: name)
    }

    /// Every file the photos would be written to, as far as they are known
    /// now (names with time fields are known as each photo is taken: the first is checked).
    func plannedFiles() throws(ServiceError) -> [String] {
        guard let template = file?.template else { return [] }
        let known = template.namesEachFile && !template.hasCounter ? 1 : count
        var files: [String] = []
        for number in 1...known {
            guard let path = try path(number: number) else { continue }
            files.append(path)
            if format == .raw { files.append(PhotoOutput.rawSidecarPath(for: path)) }
        }
        return files
    }
}
