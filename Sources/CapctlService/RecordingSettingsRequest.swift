import CapctlCommands
import ArgumentParser
import CaptureKit

/// A recording's settings as `POST /recordings` gives them, turned into the
/// `record` command they stand for: each key is one of record's long options
/// in camelCase, its value as on the command line (or a number, a boolean for
/// a flag, an array for an option given several times); `file` is OUT, a name
/// inside the service's folder. `record`'s own parsing and checks then apply,
/// so the service takes exactly what `record` takes.
enum RecordingSettingsRequest {
    /// Options of `record` a service recording cannot take, and why.
    static let refused: [String: String] = {
        let devices = "the service records the devices it opened; choose them with capctl serve's --video and --audio"
        let overlay = "the overlay is drawn into the camera's frames for every recording, stream and view of it; start the service with --overlay TEXT (or --video DEV,overlay=TEXT)"
        let formats = "the cameras' formats are set when the service starts (capctl serve --size, --fps …)"
        return [
            "video": devices, "audio": devices, "stopOnDeviceLoss": devices,
            "sessionPreset": formats, "size": formats, "fps": formats, "pixelFormat": formats, "libv4l2": formats,
            "overlay": overlay, "overlayPosition": overlay,
            "sampleRate": formats, "channels": formats, "noRealtime": "the service captures in real time",
            "noLock": "the service holds the cameras' configuration lock as it started (capctl serve --no-lock)",
            "overwrite": "the service never overwrites a file; choose a new name",
            "progress": "progress goes to the service's events (GET /events) as JSON",
            "json": "progress goes to the service's events (GET /events) as JSON",
            "out": "the file to write is 'file', a name inside the service's folder",
        ]
    }()

    /// The `record` command `settings` stands for, its OUT already the path inside `folder`.
    static func command(from settings: [String: JSONValue], folder: ServiceFolder) throws(ServiceError) -> Capctl.Record {
        var arguments: [String] = []
        var file: String?
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            if key == "file" {
                guard case .string(let name) = value else {
                    throw ServiceError(.badRequest, "file must be a string, a name inside the service's folder such as 'door-%Y%m%d-%H%M%S.mp4'")
                }
                file = try folder.path(forTemplate: name)
                continue
            }
            if let reason = refused[key] { throw ServiceError(.badRequest, "\(key) is not taken here: \(reason)") }
            guard key.first?.isLowercase == true, key.allSatisfy({ $0.isLetter || $0.isNumber }) else {
                throw ServiceError(.badRequest, "unknown setting '\(key)'; the keys are record's long options in camelCase, such as maxDuration")
            }
            arguments += try words(key: key, value: value)
        }
        if let file { arguments += ["--", file] }
        do {
            return try Capctl.Record.parse(arguments)
        } catch {
            throw ServiceError(.badRequest, message(for: error, keys: Array(settings.keys)))
        }
    }

    /// The command-line words for one setting; `--option=value` keeps a value
    /// that begins with '-' from reading as an option.
    private static func words(key: String, value: JSONValue) throws(ServiceError) -> [String] {
        let option = "--" + kebab(key)
        switch value {
        case .bool(true): return [option]
        case .bool(false), .null: return []
        case .array(let items):
            var words: [String] = []
            for item in items {
                guard let word = item.word else {
                    throw ServiceError(.badRequest, "\(key): each item must be a string or a number, not \(item.kindName)")
                }
                words.append(option + "=" + word)
            }
            return words
        case .object(let items) where key == "metadata":
            var words: [String] = []
            for (name, item) in items.sorted(by: { $0.key < $1.key }) {
                guard let word = item.word else { throw ServiceError(.badRequest, "metadata.\(name) must be a string or a number") }
                words.append(option + "=" + name + "=" + word)
            }
            return words
        default:
            guard let word = value.word else {
                throw ServiceError(.badRequest, "\(key) must be a string or a number (or true for a flag), not \(value.kindName)")
            }
            return [option + "=" + word]
        }
    }

    /// `maxDuration` → `max-duration`.
    static func kebab(_ key: String) -> String {
        var result = ""
        for character in key {
            if character.isUppercase {
                result += "-" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// record's message for a refused command, one line, naming the JSON keys rather than the options.
    private static func message(for error: any Error, keys: [String]) -> String {
        var text = Capctl.oneLine(Capctl.Record.message(for: error)) ?? "\(error)"
        if text.hasPrefix("Error: ") { text = String(text.dropFirst(7)) }
        // Longest first, so that --max-duration is not read as --max.
        for key in keys.sorted(by: { $0.count > $1.count }) where key != "file" {
            text = text.replacing("--" + kebab(key), with: key)
        }
        text = text.replacing("Unknown option '", with: "unknown setting '")
        text = text.replacing("OUT", with: "file")
        return text
    }
}
