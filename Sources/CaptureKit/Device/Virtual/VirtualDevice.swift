/// A capture device made in software: for trying capctl without a camera
/// or microphone, for tests, and for benchmarks. Named on the command line
/// like a device, by a specifier:
///
/// - `test-pattern`: a camera showing moving colour bars and a frame counter;
/// - `test-tone`, `test-tone:HZ`: a microphone hearing a sine tone (440 Hz
///   at −6 dBFS by default); after commas, `level=DBFS` (or `level=silence`)
///   and `delay=TIME` (silence for that long first), such as
///   `test-tone:1000,level=-20,delay=3`;
/// - `file:PATH`: a camera replaying the video of a file.
///
/// The unique IDs that `list-devices` prints (`virtual:test-pattern`) name the same devices.
public enum VirtualDevice: Sendable, Hashable {
    case testPattern
    /// A sine of `frequency` hertz whose peak is `level` dBFS (−∞: silence),
    /// after `delay` seconds of silence.
    case testTone(frequency: Double, level: Double = VirtualDevice.defaultToneLevel, delay: Double = 0)
    case file(path: String)

    /// The tone's frequency when the specifier gives none.
    public static let defaultToneFrequency = 440.0
    /// The tone's peak level, in dBFS, when the specifier gives none.
    public static let defaultToneLevel = -6.0
    /// The highest tone frequency a specifier may ask for.
    public static let maximumToneFrequency = 20000.0
    /// What unique IDs of virtual devices begin with.
    public static let uniqueIDPrefix = "virtual:"

    /// The virtual devices `list-devices` shows: the test pattern and the 440 Hz tone.
    public static let listed: [VirtualDevice] = [.testPattern, .testTone(frequency: defaultToneFrequency)]

    /// The device a specifier names; nil when it names no virtual device or is malformed.
    public init?(specifier: String) {
        guard let device = try? Self.parse(specifier) else { return nil }
        self = device
    }

    /// The device a specifier names, or nil when the specifier is not a
    /// virtual one (a device path, `video:0`, a unique ID of a real device).
    /// Throws for a specifier that is virtual but malformed: `test-tone:abc`,
    /// a frequency out of range, `file:` without a path.
    public static func parse(_ specifier: String) throws(CaptureError) -> VirtualDevice? {
        var text = Substring(specifier)
        let named = text.hasPrefix(uniqueIDPrefix)
        if named { text = text.dropFirst(uniqueIDPrefix.count) }
        if text == "test-pattern" { return .testPattern }
        if text.hasPrefix("test-pattern:") {
            throw .unsupported(specifier, reason: "the test pattern takes no parameter; its size, rate and pixel format come from the request")
        }
        if text == "test-tone" || text.hasPrefix("test-tone:") || text.hasPrefix("test-tone,") {
            return try parseTone(text.dropFirst("test-tone".count), specifier: specifier)
        }
        if text.hasPrefix("file:") {
            let path = text.dropFirst("file:".count)
            guard !path.isEmpty else { throw .unsupported(specifier, reason: "name the file to replay after 'file:', such as file:clip.y4m") }
            return .file(path: String(path))
        }
        if named {
            throw .device(.noSuchDevice(specifier, reason: "no such virtual device; there are test-pattern, test-tone[:HZ][,level=DBFS][,delay=TIME] and file:PATH"))
        }
        return nil
    }

    /// The specifier that names the device: `test-pattern`, `test-tone`,
    /// `test-tone:880`, `test-tone:880,level=-20,delay=2.5`, `file:clip.y4m`.
    public var specifier: String {
        switch self {
        case .testPattern: return "test-pattern"
        case .testTone(let frequency, let level, let delay):
            var text = frequency == Self.defaultToneFrequency ? "test-tone" : "test-tone:\(Self.number(frequency))"
            if level != Self.defaultToneLevel { text += ",level=" + (level == -.infinity ? "silence" : Self.number(level)) }
            if delay != 0 { text += ",delay=\(Self.number(delay))" }
            return text
        case .file(let path): return "file:" + path
        }
    }

    /// A unique ID for `list-devices`: the specifier after `virtual:`.
    public var uniqueID: String { Self.uniqueIDPrefix + specifier }

    public var mediaType: MediaType {
        switch self {
        case .testPattern, .file: return .video
        case .testTone: return .audio
        }
    }

    /// A name for messages and listings.
    public var localizedName: String {
        switch self {
        case .testPattern: return "Test pattern"
        case .testTone(let frequency, let level, let delay):
            var details = level == -.infinity ? ["silence"] : ["\(Self.number(frequency)) Hz"]
            if level != Self.defaultToneLevel && level != -.infinity { details.append("\(Self.number(level)) dBFS") }
            if delay != 0 && level != -.infinity { details.append("after \(Self.number(delay)) s") }
            return "Test tone (\(details.joined(separator: ", ")))"
        case .file(let path): return "File \(path.split(separator: "/").last.map(String.init) ?? path)"
        }
    }

    /// A capture source for the device: `video` applies to the test pattern
    /// and files, `audio` to the tone. With `realtime` false, samples come
    /// as fast as they are made, stamped as in real time.
    package func makeSource(video: CaptureVideoRequest = CaptureVideoRequest(), audio: CaptureAudioRequest = CaptureAudioRequest(),
                           realtime: Bool = true) -> any CaptureSource {
        switch self {
        case .testPattern: return TestPatternSource(request: video, realtime: realtime)
        case .testTone(let frequency, let level, let delay):
            return TestToneSource(frequency: frequency, level: level, delay: delay, request: audio, realtime: realtime)
        case .file(let path): return FileCaptureSource(path: path, request: video, realtime: realtime)
        }
    }

    /// 440, 440.5, -20: whole numbers without a fraction.
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// The tone after `test-tone`: nothing, `:HZ`, then options after commas.
    private static func parseTone(_ rest: Substring, specifier: String) throws(CaptureError) -> VirtualDevice {
        let parts = rest.split(separator: ",", omittingEmptySubsequences: false)
        var frequency = defaultToneFrequency, level = defaultToneLevel, delay = 0.0
        if let first = parts.first, first.hasPrefix(":") {
            let value = first.dropFirst()
            guard let hertz = Double(value), hertz.isFinite, hertz > 0, hertz <= maximumToneFrequency else {
                throw .unsupported(specifier, reason: "'\(value)' is not a tone frequency; give hertz above 0 and up to 20000, such as test-tone:880")
            }
            frequency = hertz
        }
        for option in parts.dropFirst() {
            let pair = option.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = pair.count == 2 ? String(pair[1]) : ""
            switch pair.first {
            case "level":
                guard let parsed = toneLevel(value) else {
                    throw .unsupported(specifier, reason: "level '\(value)' is not a level; give dBFS up to 0, such as level=-20, or level=silence")
                }
                level = parsed
            case "delay":
                guard let parsed = toneDelay(value) else {
                    throw .unsupported(specifier, reason: "delay '\(value)' is not a time; give seconds, such as delay=3 or delay=500ms")
                }
                delay = parsed
            default:
                throw .unsupported(specifier, reason: "the test tone takes level=DBFS and delay=TIME after commas, such as test-tone:1000,level=-20,delay=3")
            }
        }
        return .testTone(frequency: frequency, level: level, delay: delay)
    }

    /// `-20`, `-20dB`, `-20dBFS`: a level up to 0 dBFS; `silence` or `-inf`: −∞.
    private static func toneLevel(_ text: String) -> Double? {
        var value = Substring(text.lowercased())
        if value == "silence" || value == "-inf" { return -.infinity }
        for unit in ["dbfs", "db"] where value.hasSuffix(unit) {
            value = value.dropLast(unit.count)
            break
        }
        guard let level = Double(value), level.isFinite, level <= 0 else { return nil }
        return level
    }

    /// `3`, `2.5`, `0:05`, `3s`, `500ms`: a time from 0 to a day, in seconds.
    private static func toneDelay(_ text: String) -> Double? {
        var value = text.lowercased()
        var scale = 1.0
        if value.hasSuffix("ms") {
            value.removeLast(2)
            scale = 0.001
        } else if value.hasSuffix("s") {
            value.removeLast()
        }
        guard let time = MediaTime(parsing: value) else { return nil }
        let seconds = time.seconds * scale
        return seconds <= 86400 ? seconds : nil
    }
}
