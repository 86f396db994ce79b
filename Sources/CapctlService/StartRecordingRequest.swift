import ArgumentParser
import CapctlCommands
import CaptureKit

/// `POST /recordings`' body, read into the `RecordingOptions` that
/// `record`'s options make too, and checked by the same `validate()`: each
/// key is one of record's long options in camelCase (`maxDuration`), its
/// value as on the command line, or a number, a boolean for a flag, an array
/// for an option given several times (`stream`), an object for `metadata`;
/// `file` is OUT, a name inside the service's folder. Refusals name the keys.
package struct StartRecordingRequest: Sendable {
    /// The recording's settings, `out` still the name inside the folder.
    package var options: RecordingOptions

    /// Reads and checks a request body.
    package init(json body: [String: JSONValue]) throws(ServiceError) {
        options = RecordingOptions()
        for (key, value) in body.sorted(by: { $0.key < $1.key }) {
            if let reason = Self.refused[key] { throw ServiceError(.badRequest, "\(key) is not taken here: \(reason)") }
            guard let setter = Self.setters[key] else {
                throw ServiceError(.badRequest, "unknown setting '\(key)'; the keys are record's long options in camelCase, such as maxDuration")
            }
            if value == .null { continue }
            try setter(&options, key, value)
        }
        do throws(SettingError) {
            try options.validate()
        } catch {
            throw ServiceError(.badRequest, error.message(.json))
        }
    }

    /// The keys a body may hold.
    package static var keys: Set<String> { Set(setters.keys) }

    /// Options of `record` a service recording cannot take, and why.
    package static let refused: [String: String] = {
        let devices = "the service records the devices it opened; choose them with capctl serve's --video and --audio"
        let overlay = "the overlay is drawn into the camera's frames for every recording, stream and view of it; start the service with --overlay TEXT (or --video DEV,overlay=TEXT)"
        let formats = "the cameras' formats are set when the service starts (capctl serve --size, --fps …)"
        let events = "progress goes to the service's events (GET /events) as JSON"
        return [
            "video": devices, "audio": devices, "stopOnDeviceLoss": devices,
            "sessionPreset": formats, "size": formats, "fps": formats, "pixelFormat": formats, "libv4l2": formats,
            "overlay": overlay, "overlayPosition": overlay,
            "sampleRate": formats, "channels": formats, "noRealtime": "the service captures in real time",
            "noLock": "the service holds the cameras' configuration lock as it started (capctl serve --no-lock)",
            "overwrite": "the service never overwrites a file; choose a new name",
            "progress": events, "json": events,
            "out": "the file to write is 'file', a name inside the service's folder",
        ]
    }()

    private typealias Setter = @Sendable (inout RecordingOptions, String, JSONValue) throws(ServiceError) -> Void

    private static let time = "a time such as 10s, 1m30s, 500ms or 90 (seconds)"
    private static let size = "a size such as 500K, 20M, 4G or 1GiB"
    private static let rate = "a rate such as 4M or 2500K"

    /// How each key is read into the options.
    private static let setters: [String: Setter] = [
        "file": { options, key, value throws(ServiceError) in
            guard case .string(let name) = value else {
                throw ServiceError(.badRequest, "file must be a string, a name inside the service's folder such as 'door-%Y%m%d-%H%M%S.mp4'")
            }
            options.out = name
        },
        "audioAlternates": flag(\.audioAlternates),
        "maxDuration": optional(\.maxDuration, time), "maxSize": optional(\.maxSize, size), "minFreeSpace": required(\.minFreeSpace, size),
        "segmentDuration": optional(\.segmentDuration, time), "segmentSize": optional(\.segmentSize, size),
        "keepFiles": integer(\.keepFiles), "keepSize": optional(\.keepSize, size), "keepAge": optional(\.keepAge, time),
        "onLowSpace": required(\.onLowSpace, "stop or rotate"),
        "videoCodec": optional(\.videoCodec, "h264, hevc, vp9, av1, mjpeg or copy"), "crf": integer(\.crf), "bitrate": optional(\.bitrate, rate),
        "preset": text(\.preset), "maxrate": optional(\.maxrate, rate), "bufsize": optional(\.bufsize, size),
        "keyframeInterval": optional(\.keyframeInterval, time), "threads": integer(\.threads),
        "audioCodec": optional(\.audioCodec, "aac, opus, flac, pcm_s16le, pcm_s24le, pcm_s32le or pcm_f32le"),
        "audioBitrate": optional(\.audioBitrate, "a rate such as 128K"), "fragmentInterval": optional(\.fragmentInterval, time),
        "noFragments": flag(\.noFragments), "faststart": flag(\.faststart), "fragmentsOnly": flag(\.fragmentsOnly),
        "startPaused": flag(\.startPaused), "preRoll": optional(\.preRoll, time), "preRollMemory": optional(\.preRollMemory, size),
        "resumeOn": optional(\.resumeOn, "motion, or motion:PERCENT with PERCENT above 0 and up to 100"),
        "pauseAfterStill": optional(\.pauseAfterStill, time), "minEvent": optional(\.minEvent, time), "filePerEvent": flag(\.filePerEvent),
        "silenceTimeout": optional(\.silenceTimeout, time),
        "silenceThreshold": optional(\.silenceThreshold, "a level in dBFS above -160 and up to 0, such as -50"),
        "timelapse": optional(\.timelapse, time), "timelapseFps": optional(\.timelapseFps, "a frame rate such as 30"),
        "metadata": { options, key, value throws(ServiceError) in options.metadata = try metadata(value) },
        "progressInterval": required(\.progressInterval, time),
        "stream": { options, key, value throws(ServiceError) in options.stream = try words(key, value) },
        "streamFormat": optional(\.streamFormat, "flv, mpegts or rtsp"), "streamRequired": flag(\.streamRequired),
        "streamVideoBitrate": optional(\.streamVideoBitrate, rate), "streamPreset": optional(\.streamPreset, "an x264 preset, ultrafast … placebo"),
        "streamAudioBitrate": optional(\.streamAudioBitrate, "a rate such as 128K"),
        "streamKeyframeInterval": optional(\.streamKeyframeInterval, time), "streamTimeout": optional(\.streamTimeout, time),
    ]

    /// A flag: true or false.
    private static func flag(_ path: WritableKeyPath<RecordingOptions, Bool> & Sendable) -> Setter {
        { options, key, value throws(ServiceError) in
            guard case .bool(let on) = value else { throw ServiceError(.badRequest, "\(key) is a flag: true or false, not \(shown(value))") }
            options[keyPath: path] = on
        }
    }

    /// A value as the command line writes it (a string, or a number).
    private static func optional<Value: ExpressibleByArgument>(_ path: WritableKeyPath<RecordingOptions, Value?> & Sendable, _ hint: String) -> Setter {
        { options, key, value throws(ServiceError) in options[keyPath: path] = try parsed(Value.self, key, value, hint) }
    }

    private static func required<Value: ExpressibleByArgument>(_ path: WritableKeyPath<RecordingOptions, Value> & Sendable, _ hint: String) -> Setter {
        { options, key, value throws(ServiceError) in options[keyPath: path] = try parsed(Value.self, key, value, hint) }
    }

    private static func parsed<Value: ExpressibleByArgument>(_ type: Value.Type, _ key: String, _ value: JSONValue, _ hint: String) throws(ServiceError) -> Value {
        guard let word = value.word else { throw ServiceError(.badRequest, "\(key) must be \(hint), not \(shown(value))") }
        guard let parsed = Value(argument: word) else { throw ServiceError(.badRequest, "\(key) '\(word)' is not valid; give \(hint)") }
        return parsed
    }

    private static func integer(_ path: WritableKeyPath<RecordingOptions, Int?> & Sendable) -> Setter {
        { options, key, value throws(ServiceError) in
            let number: Int? = switch value {
            case .integer(let integer): Int(exactly: integer)
            case .number(let double): double == double.rounded() ? Int(exactly: double) : nil
            case .string(let text): Int(text)
            default: nil
            }
            guard let number else { throw ServiceError(.badRequest, "\(key) must be a whole number, not \(shown(value))") }
            options[keyPath: path] = number
        }
    }

    private static func text(_ path: WritableKeyPath<RecordingOptions, String?> & Sendable) -> Setter {
        { options, key, value throws(ServiceError) in
            guard let word = value.word else { throw ServiceError(.badRequest, "\(key) must be a string, not \(shown(value))") }
            options[keyPath: path] = word
        }
    }

    /// One string or an array of them (an option given several times).
    private static func words(_ key: String, _ value: JSONValue) throws(ServiceError) -> [String] {
        switch value {
        case .string(let word): return [word]
        case .array(let items):
            var words: [String] = []
            for item in items {
                guard case .string(let word) = item else { throw ServiceError(.badRequest, "\(key): each item must be a string, not \(shown(item))") }
                words.append(word)
            }
            return words
        default:
            throw ServiceError(.badRequest, "\(key) must be a string or an array of strings, not \(shown(value))")
        }
    }

    /// `{"title": "Lecture"}`, or record's KEY=VALUE words.
    private static func metadata(_ value: JSONValue) throws(ServiceError) -> [String] {
        guard case .object(let items) = value else { return try words("metadata", value) }
        var words: [String] = []
        for (name, item) in items.sorted(by: { $0.key < $1.key }) {
            guard let word = item.word else { throw ServiceError(.badRequest, "metadata.\(name) must be a string or a number, not \(shown(item))") }
            words.append(name + "=" + word)
        }
        return words
    }

    private static func shown(_ value: JSONValue) -> String {
        value.word.map { "'\($0)'" } ?? value.kindName
    }
}

extension SettingNames {
    /// The service's: the JSON keys (`maxDuration`), and `file` for OUT.
    static let json = SettingNames { $0 == .out ? "file" : $0.rawValue }
}
