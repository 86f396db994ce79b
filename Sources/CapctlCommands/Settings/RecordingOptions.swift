import CaptureKit

/// A recording's settings, one value for both of the ways a recording is
/// asked for: `record`'s options (`Capctl.Record.options`) and
/// `POST /recordings`' JSON (the service's `StartRecordingRequest`). Each
/// property is one of record's long options, named in camelCase as the JSON
/// key is; `out` is OUT (the JSON key `file`). `validate()` checks it in one
/// place for both, and its errors name each setting as the interface that
/// reports them calls it (`SettingNames`); `RecordRequest(options:)` turns it
/// into CaptureKit's configuration.
package struct RecordingOptions: Sendable {
    // Devices
    package var video: [CameraArgument] = []
    package var stopOnDeviceLoss = false
    package var audio: [DeviceArgument] = []
    package var audioAlternates = false
    package var sessionPreset: SessionPreset?
    package var size: FrameSizeArgument?
    package var fps: RateArgument?
    package var pixelFormat: String?
    package var libv4l2 = false
    package var noRealtime = false
    package var sampleRate: Int?
    package var channels: Int?
    package var overlay: String?
    package var overlayPosition: TextOverlay.Position?
    // Limits and segments
    package var maxDuration: DurationArgument?
    package var maxSize: ByteCountArgument?
    package var minFreeSpace = RecordingOptions.defaultMinFreeSpace
    package var segmentDuration: DurationArgument?
    package var segmentSize: ByteCountArgument?
    // Loop recording
    package var keepFiles: Int?
    package var keepSize: ByteCountArgument?
    package var keepAge: DurationArgument?
    package var onLowSpace = LowSpaceAction.stop
    // Encoding
    package var videoCodec: VideoCodecArgument?
    package var crf: Int?
    package var bitrate: ByteCountArgument?
    package var preset: String?
    package var maxrate: ByteCountArgument?
    package var bufsize: ByteCountArgument?
    package var keyframeInterval: DurationArgument?
    package var threads: Int?
    package var audioCodec: AudioCodecArgument?
    package var audioBitrate: ByteCountArgument?
    package var fragmentInterval: DurationArgument?
    package var noFragments = false
    package var faststart = false
    package var fragmentsOnly = false
    // Pre-roll and triggers
    package var startPaused = false
    package var preRoll: DurationArgument?
    package var preRollMemory: ByteCountArgument?
    package var resumeOn: ResumeTrigger?
    package var pauseAfterStill: DurationArgument?
    package var minEvent: DurationArgument?
    package var filePerEvent = false
    // Sound
    package var silenceTimeout: DurationArgument?
    package var silenceThreshold: DecibelArgument?
    // Time-lapse
    package var timelapse: DurationArgument?
    package var timelapseFps: RateArgument?
    // The file and progress
    package var metadata: [String] = []
    package var overwrite = false
    package var noLock = false
    package var progress: ProgressStyle?
    package var progressInterval = RecordingOptions.defaultProgressInterval
    package var json = false
    // Streaming
    package var stream: [String] = []
    package var streamFormat: StreamFormat?
    package var streamRequired = false
    package var streamVideoBitrate: ByteCountArgument?
    package var streamPreset: StreamPresetArgument?
    package var streamAudioBitrate: ByteCountArgument?
    package var streamKeyframeInterval: DurationArgument?
    package var streamTimeout: DurationArgument?
    /// OUT: the file, or the template of the files, to record to.
    package var out: String?

    /// --min-free-space when none is given.
    package static let defaultMinFreeSpace = ByteCountArgument(bytes: 64 * 1_048_576, text: "64MiB")
    /// --progress-interval when none is given.
    package static let defaultProgressInterval = DurationArgument(argument: "1")!

    package init() {}

    /// Every setting, by the name its property has (the JSON key; `out` is `file` in JSON).
    package enum Key: String, Sendable, CaseIterable {
        case video, stopOnDeviceLoss, audio, audioAlternates, sessionPreset, size, fps, pixelFormat, libv4l2, noRealtime
        case sampleRate, channels, overlay, overlayPosition
        case maxDuration, maxSize, minFreeSpace, segmentDuration, segmentSize
        case keepFiles, keepSize, keepAge, onLowSpace
        case videoCodec, crf, bitrate, preset, maxrate, bufsize, keyframeInterval, threads, audioCodec, audioBitrate
        case fragmentInterval, noFragments, faststart, fragmentsOnly
        case startPaused, preRoll, preRollMemory, resumeOn, pauseAfterStill, minEvent, filePerEvent
        case silenceTimeout, silenceThreshold, timelapse, timelapseFps
        case metadata, overwrite, noLock, progress, progressInterval, json
        case stream, streamFormat, streamRequired, streamVideoBitrate, streamPreset, streamAudioBitrate, streamKeyframeInterval, streamTimeout
        case out

        /// The long option's name: `maxDuration` → `max-duration`.
        package var kebab: String {
            var result = ""
            for character in rawValue {
                if character.isUppercase {
                    result += "-" + character.lowercased()
                } else {
                    result.append(character)
                }
            }
            return result
        }
    }
}

/// What an interface calls each setting of a recording in its messages.
package struct SettingNames: Sendable {
    private let name: @Sendable (RecordingOptions.Key) -> String

    package init(_ name: @escaping @Sendable (RecordingOptions.Key) -> String) { self.name = name }

    package subscript(_ key: RecordingOptions.Key) -> String { name(key) }

    /// `record`'s: `--max-duration`, and OUT.
    package static let commandLine = SettingNames { $0 == .out ? "OUT" : "--" + $0.kebab }
}

/// A recording's settings that cannot work: the setting at fault, and a
/// message that names every setting through the names it is given, so that
/// the command line and the service each say it in their own words.
package struct SettingError: Error, Sendable {
    package let setting: RecordingOptions.Key
    private let text: @Sendable (SettingNames) -> String

    package init(_ setting: RecordingOptions.Key, _ text: @escaping @Sendable (SettingNames) -> String) {
        self.setting = setting
        self.text = text
    }

    /// One line, each setting named as `names` names it.
    package func message(_ names: SettingNames) -> String { text(names) }
}
