import CapctlCommands
import CaptureKit

/// `POST /photos`' body: `snap`'s settings as JSON keys (`format`,
/// `quality`, `count`, `interval`, `flash`; `file` is snap's OUT, a name
/// inside the service's folder) and `camera`, the session input to take them
/// from. It reads the keys into the `CapturePhotoSeries.Settings` that `snap`'s
/// options make too, and checks them with the same `validate()`; refusals
/// name the JSON keys.
package struct PhotoRequest: Sendable {
    /// The camera's input id; nil: the first camera.
    package var camera: String?
    /// The series, its destination still the name inside the folder.
    package var settings: CapturePhotoSeries.Settings

    /// The most photos one request takes.
    static let maximumCount = 100
    /// The longest a request may take photos for (count − 1 intervals): the
    /// HTTP request waits for the last photo.
    static let maximumDuration = MediaTime(value: 600, timescale: 1)

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

    /// What each setting of a series is called in the JSON body.
    package static func key(_ setting: CapturePhotoSeries.Settings.Setting) -> String {
        switch setting {
        case .destination: return "file"
        case .format: return "format"
        case .quality: return "quality"
        case .count: return "count"
        case .interval: return "interval"
        case .flashMode: return "flash"
        case .livePhotoMovieFileType: return "liveFormat"
        }
    }

    /// Reads and checks a request body.
    package init(json body: [String: JSONValue]) throws(ServiceError) {
        for key in body.keys.sorted() where !["format", "quality", "count", "interval", "flash", "file", "camera"].contains(key) {
            if let reason = Self.refused[key] { throw ServiceError(.badRequest, "\(key) is not taken here: \(reason)") }
            throw ServiceError(.badRequest, "unknown setting '\(key)'; a photo takes format, quality, count, interval, flash, file and camera")
        }
        settings = CapturePhotoSeries.Settings()
        settings.maximumCount = Self.maximumCount
        settings.maximumDuration = Self.maximumDuration
        // A failed photo fails the request: no further one is asked for.
        settings.stopsAfterFailure = true
        if let value = body["camera"] {
            guard let id = value.word, let index = Int(id), index >= 0 else {
                throw ServiceError(.badRequest, "camera must be a device id GET /devices lists (from 0), not \(Self.shown(value))")
            }
            camera = String(index)
        }
        if let value = body["file"] {
            guard case .string(let name) = value else {
                throw ServiceError(.badRequest, "file must be a string, a name inside the service's folder such as 'shot-%3n.jpg'")
            }
            settings.destination = name
        }
        if let value = body["format"] {
            guard case .string(let text) = value, let format = PhotoFileFormat(rawValue: text.lowercased()) else {
                throw ServiceError(.badRequest, "format must be jpeg, png or raw, not \(Self.shown(value))")
            }
            settings.format = format
        }
        if let value = body["quality"] { settings.quality = try Self.integer(value, "quality") }
        if let value = body["count"] { settings.count = try Self.integer(value, "count") }
        if let value = body["interval"] {
            guard let word = value.word, let interval = IntervalArgument(argument: word) else {
                throw ServiceError(.badRequest, "interval must be 0 or a positive time such as 2, '500ms' or '1m', not \(Self.shown(value))")
            }
            settings.interval = interval.time
        }
        if let value = body["flash"] {
            guard case .string(let text) = value, let mode = PhotoFlashMode(rawValue: text.lowercased()) else {
                throw ServiceError(.badRequest, "flash must be off, on or auto, not \(Self.shown(value))")
            }
            settings.flashMode = mode
        }
        do throws(CapturePhotoSeries.SettingsError) {
            try settings.validate()
        } catch {
            if case .severalPhotosNeedDestination(let count) = error.problem {
                throw ServiceError(.badRequest, "a burst of \(count) photos needs file, a name template inside the service's folder such as 'shot-%3n.jpg'; without file, one photo is answered as the image itself")
            }
            throw ServiceError(.badRequest, error.message(naming: Self.key))
        }
    }

    /// A whole number, given as a JSON number or a string of digits.
    private static func integer(_ value: JSONValue, _ key: String) throws(ServiceError) -> Int {
        let number: Int?
        switch value {
        case .integer(let integer): number = Int(exactly: integer)
        case .number(let double): number = double == double.rounded() ? Int(exactly: double) : nil
        case .string(let text): number = Int(text)
        default: number = nil
        }
        guard let number else { throw ServiceError(.badRequest, "\(key) must be a whole number, not \(shown(value))") }
        return number
    }

    private static func shown(_ value: JSONValue) -> String {
        value.word.map { "'\($0)'" } ?? value.kindName
    }
}
