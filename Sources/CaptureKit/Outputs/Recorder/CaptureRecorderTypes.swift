/// What a `CaptureRecorder` records: a file (or files a template names),
/// streams beside it, limits, segments, a start paused with a pre-roll,
/// and a motion trigger.
package struct CaptureRecorderConfiguration: Sendable {
    /// The file, or a template naming the files (`%n`, `%c`, strftime
    /// fields; see `FileNameTemplate`); nil when the streams are the whole
    /// recording. Its extension picks the container; an audio container
    /// records only the microphones.
    package var destination: String?
    /// Codecs, fragments, metadata. The file's make and model are the
    /// first camera's unless the metadata names them (with a file per
    /// camera, each file's own).
    package var settings = RecordingSettings()
    /// The whole recording's limits (every file, pauses left out); nil or
    /// 0 for none.
    package var maxDuration: MediaTime?
    package var maxSize: Int64?
    /// Stop before the volume's free space falls below this many bytes; 0 for no check.
    package var minFreeSpace: Int64 = 0
    /// A new file at this media time or size (the destination must name each file).
    package var segmentDuration: MediaTime?
    package var segmentSize: Int64?
    package var overwritesExistingFiles = false
    /// Loop recording: which of the files are kept, and what the
    /// free-space floor does (see `RecordingRetention`). Needs a series of
    /// files (segments or a file per event) that the destination tells
    /// apart with `%n` or strftime fields.
    package var retention = RecordingRetention()
    /// Begin paused (armed): nothing is written until `resume()` or motion.
    package var startsPaused = false
    /// While paused, the media kept in memory and written first on resume.
    package var preRoll: MediaTime?
    /// The most bytes the pre-roll holds (nil: `CaptureFileOutput.defaultPreRollMemoryLimit`).
    package var preRollMemoryLimit: Int?
    /// Resume on motion in the first camera's picture, pause once still.
    package var motion: MotionDetector.Configuration?
    /// Watch every microphone for silence (see `AudioSilenceMonitor`): the
    /// delegate hears when one stays below the threshold for the timeout,
    /// and when its sound returns. The session must have a microphone.
    package var silence: AudioSilenceMonitor.Configuration?
    /// Each pause finishes the file; the next resume begins a new one.
    package var filePerEvent = false
    /// With several cameras, one lost ends the recording instead of its track.
    package var stopsOnDeviceLoss = false
    /// Streams sent beside the file (or, without a file, instead of one).
    package var streams: [CaptureRecorderStream] = []
    /// A stream that fails ends the recording (and is not retried).
    package var streamsAreRequired = false

    package init(destination: String?) {
        self.destination = destination
    }
}

/// One live stream of a recording.
package struct CaptureRecorderStream: Sendable {
    package var destination: StreamDestination
    package var settings: RecordingSettings
    /// Keyframe spacing (nil: the output's default, 2 s).
    package var keyframeInterval: MediaTime?
    /// How long a connection may take (nil: the output's default).
    package var connectionTimeout: MediaTime?

    package init(destination: StreamDestination, settings: RecordingSettings, keyframeInterval: MediaTime? = nil,
                connectionTimeout: MediaTime? = nil) {
        self.destination = destination
        self.settings = settings
        self.keyframeInterval = keyframeInterval
        self.connectionTimeout = connectionTimeout
    }
}

/// Why a recorder could not start.
package enum CaptureRecorderError: Error, Sendable, CustomStringConvertible {
    /// The recording was refused or failed as it began (its file, its settings, the motion trigger).
    case recording(RecordingError)
    /// A stream refused its settings (stream number from 1).
    case streamRefused(Int, WriterError)
    /// The session could not start (a device, a camera given twice, bandwidth).
    case capture(CaptureError)

    package var description: String {
        switch self {
        case .recording(let error): return error.description
        case .streamRefused(_, let error): return error.description
        case .capture(let error): return error.description
        }
    }
}

/// A recording's progress: what is in its files so far, and its streams.
package struct CaptureRecorderProgress: Sendable {
    /// The file output's totals (without a file: the media time streamed).
    package var statistics: RecordingStatistics
    /// Bytes free on the volume of the file being written.
    package var freeSpace: Int64?
    /// Each stream's destination and totals, in the configuration's order.
    package var streams: [(destination: StreamDestination, statistics: LiveStreamStatistics)]
}

/// One microphone's levels over an interval (see `CaptureRecorder.readAudioLevels()`).
package struct CaptureRecorderAudioLevels: Sendable {
    /// Its number, from 1, among the session's microphones (audio inputs) in the session's order.
    package var microphone: Int
    /// The microphone's input on the session.
    package var input: CaptureInput
    /// Its levels over the interval.
    package var levels: AudioLevels
}

/// A required stream that failed, and so ended the recording.
package struct CaptureRecorderStreamFailure: Sendable {
    /// Its number, from 1, in the configuration's order.
    package var index: Int
    package var destination: StreamDestination
    package var error: WriterError
}

/// How a recording ended.
package struct CaptureRecorderEnd: Sendable {
    package var reason: RecordingStopReason
    /// What ended the file output's recording, if not a request or limit.
    package var error: RecordingError?
    /// Without a file: the stream end that ended the recording, when it was not a stop or limit.
    package var streamEnd: LiveStreamEndReason?
    /// A required stream that failed (the files are complete).
    package var requiredStreamFailure: CaptureRecorderStreamFailure?
    /// Cameras (numbered from 1, in the session's order) lost while the others recorded on.
    package var lostCameras: [Int]
    /// The recording's totals.
    package var statistics: RecordingStatistics
}

/// Hears what a `CaptureRecorder` does; each call has an empty default.
///
/// The one delegate of CaptureKit that must be `Sendable` (AVFoundation has
/// no such type): a recorder gathers a file output, streams, a motion
/// trigger and microphones, and its calls come from all their threads at
/// once, unordered between them: the file's writing thread (files, pauses,
/// lost cameras, deletions), each stream's thread (connections), the motion
/// detector's thread (motion), a queue of the recorder's (silence), and the
/// thread that ends the recording (`didEndWith`). Only a delegate safe to
/// call from several threads at a time can hear them, which is what
/// `Sendable` states. The other delegates are called one at a time on the
/// thread or queue each names (their comments say when calls may overlap),
/// and do not require it.
package protocol CaptureRecorderDelegate: AnyObject, Sendable {
    func recorder(_ recorder: CaptureRecorder, didPauseRecordingTo path: String, cause: RecordingPauseCause)
    func recorder(_ recorder: CaptureRecorder, didResumeRecordingTo path: String, cause: RecordingPauseCause)
    /// A file was finished (or could not be made: `file.wasCreated` is false).
    func recorder(_ recorder: CaptureRecorder, didFinishRecordingTo file: RecordedFile, error: RecordingError?)
    /// Camera `number` (from 1) went away; the others record on.
    func recorder(_ recorder: CaptureRecorder, didLoseCamera number: Int, input: CaptureInput)
    /// Motion began (`started`) or ended; `score` is the percent of the picture that changed.
    func recorder(_ recorder: CaptureRecorder, didSeeMotion started: Bool, score: Double)
    /// Microphone `number` (from 1, among the session's microphones) fell
    /// silent or heard sound again (with `CaptureRecorderConfiguration.silence`);
    /// calls come in order on a queue of the recorder's, while the recording runs.
    func recorder(_ recorder: CaptureRecorder, microphone number: Int, input: CaptureInput, silence event: AudioSilenceMonitor.Event)
    func recorder(_ recorder: CaptureRecorder, streamDidConnect index: Int, destination: StreamDestination, connections: Int)
    func recorder(_ recorder: CaptureRecorder, streamDidDisconnect index: Int, destination: StreamDestination, error: WriterError)
    func recorder(_ recorder: CaptureRecorder, streamWillReconnect index: Int, destination: StreamDestination, after delay: MediaTime, attempt: Int)
    /// The retention deleted the file at `path`, which held `bytes`, for `reason`.
    func recorder(_ recorder: CaptureRecorder, didDeleteFile path: String, bytes: Int64, reason: RecordingFileDeletionReason)
    /// The recording ended: its files are finished or finishing. `finish()`
    /// answers the final account, once the files and streams are over.
    func recorder(_ recorder: CaptureRecorder, didEndWith end: CaptureRecorderEnd)
}

extension CaptureRecorderDelegate {
    package func recorder(_ recorder: CaptureRecorder, didPauseRecordingTo path: String, cause: RecordingPauseCause) {}
    package func recorder(_ recorder: CaptureRecorder, didResumeRecordingTo path: String, cause: RecordingPauseCause) {}
    package func recorder(_ recorder: CaptureRecorder, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {}
    package func recorder(_ recorder: CaptureRecorder, didLoseCamera number: Int, input: CaptureInput) {}
    package func recorder(_ recorder: CaptureRecorder, didSeeMotion started: Bool, score: Double) {}
    package func recorder(_ recorder: CaptureRecorder, microphone number: Int, input: CaptureInput, silence event: AudioSilenceMonitor.Event) {}
    package func recorder(_ recorder: CaptureRecorder, streamDidConnect index: Int, destination: StreamDestination, connections: Int) {}
    package func recorder(_ recorder: CaptureRecorder, streamDidDisconnect index: Int, destination: StreamDestination, error: WriterError) {}
    package func recorder(_ recorder: CaptureRecorder, streamWillReconnect index: Int, destination: StreamDestination, after delay: MediaTime,
                         attempt: Int) {}
    package func recorder(_ recorder: CaptureRecorder, didDeleteFile path: String, bytes: Int64, reason: RecordingFileDeletionReason) {}
    package func recorder(_ recorder: CaptureRecorder, didEndWith end: CaptureRecorderEnd) {}
}
