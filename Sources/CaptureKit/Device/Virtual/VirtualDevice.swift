/// A capture device made in software: for trying capctl without a camera
/// or microphone, for tests, and for benchmarks. Named on the command line
/// like a device, by a specifier:
///
/// - `test-pattern`: a camera showing moving colour bars and a frame counter;
/// - `test-tone`, `test-tone:HZ`: a microphone hearing a sine tone (440 Hz by default);
/// - `file:PATH`: a camera replaying the video of a file.
///
/// The unique IDs that `list-devices` prints (`virtual:test-pattern`) name the same devices.
public enum VirtualDevice: Sendable, Hashable {
    case testPattern
    case testTone(frequency: Double)
    case file(path: String)

    /// The tone's frequency when the specifier gives none.
    public static let defaultToneFrequency = 440.0
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
        if text == "test-tone" { return .testTone(frequency: defaultToneFrequency) }
        if text.hasPrefix("test-tone:") {
            let value = text.dropFirst("test-tone:".count)
            guard let frequency = Double(value), frequency.isFinite, frequency > 0, frequency <= maximumToneFrequency else {
                throw .unsupported(specifier, reason: "'\(value)' is not a tone frequency; give hertz above 0 and up to 20000, such as test-tone:880")
            }
            return .testTone(frequency: frequency)
        }
        if text.hasPrefix("file:") {
            let path = text.dropFirst("file:".count)
            guard !path.isEmpty else { throw .unsupported(specifier, reason: "name the file to replay after 'file:', such as file:clip.y4m") }
            return .file(path: String(path))
        }
        if named {
            throw .device(.noSuchDevice(specifier, reason: "no such virtual device; there are test-pattern, test-tone[:HZ] and file:PATH"))
        }
        return nil
    }

    /// The specifier that names the device: `test-pattern`, `test-tone`, `test-tone:880`, `file:clip.y4m`.
    public var specifier: String {
        switch self {
        case .testPattern: return "test-pattern"
        case .testTone(let frequency):
            return frequency == Self.defaultToneFrequency ? "test-tone" : "test-tone:\(Self.hertz(frequency))"
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
        case .testTone(let frequency): return "Test tone (\(Self.hertz(frequency)) Hz)"
        case .file(let path): return "File \(path.split(separator: "/").last.map(String.init) ?? path)"
        }
    }

    /// A capture source for the device: `video` applies to the test pattern
    /// and files, `audio` to the tone. With `realtime` false, samples come
    /// as fast as they are made, stamped as in real time.
    public func makeSource(video: CaptureVideoRequest = CaptureVideoRequest(), audio: CaptureAudioRequest = CaptureAudioRequest(),
                           realtime: Bool = true) -> any CaptureSource {
        switch self {
        case .testPattern: return TestPatternSource(request: video, realtime: realtime)
        case .testTone(let frequency): return TestToneSource(frequency: frequency, request: audio, realtime: realtime)
        case .file(let path): return FileCaptureSource(path: path, request: video, realtime: realtime)
        }
    }

    /// 440, 440.5: whole numbers without a fraction.
    private static func hertz(_ frequency: Double) -> String {
        frequency == frequency.rounded() && abs(frequency) < 1e15 ? String(Int64(frequency)) : String(frequency)
    }
}
