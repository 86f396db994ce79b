/// What a file output tells about a recording, like
/// AVCaptureFileOutputRecordingDelegate; each call has an empty default.
///
/// Threads: a recording's calls come one at a time on its writing thread
/// (AVFoundation calls on a queue of its own), with these exceptions: a
/// recording that ends before its writing thread runs (a first file that
/// cannot be made, a stop before the session runs) is reported on the
/// thread that began it (`startRecording`, or the session's
/// `startRunning()`) or stopped it, before that call returns; the motion
/// calls come on the motion detector's thread, beside the writing
/// thread's; and a recording started from the delegate of the one before
/// (the usual restart from `didFinishRecordingTo`) has a writing thread of
/// its own, whose first calls may come while the earlier one's
/// `didEndRecordingWith` runs.
///
/// Like every delegate of CaptureKit except `CaptureRecorderDelegate`, the
/// protocol does not require `Sendable`, as AVFoundation's do not: a plain
/// class works. One that uses motion or restarts from its calls keeps the
/// state those calls share behind a lock (a `Mutex`).
public protocol CaptureFileOutputRecordingDelegate: AnyObject {
    /// The first sample of a file was written.
    func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo path: String)
    func fileOutput(_ output: CaptureFileOutput, didPauseRecordingTo path: String)
    func fileOutput(_ output: CaptureFileOutput, didResumeRecordingTo path: String)
    /// A file is about to be finalized; `error` says why when it was not asked for.
    func fileOutput(_ output: CaptureFileOutput, willFinishRecordingTo path: String, error: RecordingError?)
    /// A file was finalized (or, after a write failure, left as it is).
    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?)
    /// The whole recording ended: no more files follow.
    func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?)
    /// The output's retention (`CaptureFileOutput.retention`) deleted the
    /// file at `path`, which held `bytes`, for `reason`: one of the
    /// recording's, or one of an earlier recording of the template.
    func fileOutput(_ output: CaptureFileOutput, didDeleteFile path: String, bytes: Int64, reason: RecordingFileDeletionReason)
    /// A camera went away while others went on recording: its track ends
    /// with its last frame (with one file per camera, its file is
    /// finished), and the recording goes on without it.
    func fileOutput(_ output: CaptureFileOutput, didLose input: CaptureInput, error: RecordingError)
    /// The recording paused, and what paused it. By default this calls
    /// `fileOutput(_:didPauseRecordingTo:)`.
    func fileOutput(_ output: CaptureFileOutput, didPauseRecordingTo path: String, cause: RecordingPauseCause)
    /// The recording resumed, and what resumed it. By default this calls
    /// `fileOutput(_:didResumeRecordingTo:)`.
    func fileOutput(_ output: CaptureFileOutput, didResumeRecordingTo path: String, cause: RecordingPauseCause)
    /// The output's motion trigger saw motion begin at `time` (the first
    /// frame that moved), `score` percent of the picture changed; a paused
    /// recording resumes. Comes on the motion detector's thread.
    func fileOutput(_ output: CaptureFileOutput, didDetectMotionAt time: MediaTime, score: Double)
    /// Motion ended: the picture has been still since `time`; `score` is
    /// the event's highest. A recording that runs pauses. Comes on the
    /// motion detector's thread.
    func fileOutput(_ output: CaptureFileOutput, didEndMotionAt time: MediaTime, score: Double)
}

extension CaptureFileOutputRecordingDelegate {
    public func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo path: String) {}
    public func fileOutput(_ output: CaptureFileOutput, didPauseRecordingTo path: String) {}
    public func fileOutput(_ output: CaptureFileOutput, didResumeRecordingTo path: String) {}
    public func fileOutput(_ output: CaptureFileOutput, willFinishRecordingTo path: String, error: RecordingError?) {}
    public func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {}
    public func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {}
    public func fileOutput(_ output: CaptureFileOutput, didDeleteFile path: String, bytes: Int64, reason: RecordingFileDeletionReason) {}
    public func fileOutput(_ output: CaptureFileOutput, didLose input: CaptureInput, error: RecordingError) {}
    public func fileOutput(_ output: CaptureFileOutput, didPauseRecordingTo path: String, cause: RecordingPauseCause) {
        fileOutput(output, didPauseRecordingTo: path)
    }
    public func fileOutput(_ output: CaptureFileOutput, didResumeRecordingTo path: String, cause: RecordingPauseCause) {
        fileOutput(output, didResumeRecordingTo: path)
    }
    public func fileOutput(_ output: CaptureFileOutput, didDetectMotionAt time: MediaTime, score: Double) {}
    public func fileOutput(_ output: CaptureFileOutput, didEndMotionAt time: MediaTime, score: Double) {}
}

/// What paused or resumed a recording.
public enum RecordingPauseCause: String, Sendable, Hashable {
    /// `pauseRecording()` or `resumeRecording()`.
    case requested
    /// The recording began paused (`CaptureFileOutput.startsRecordingPaused`).
    case armed
    /// The motion trigger saw motion begin (a resume).
    case motion
    /// The motion trigger saw the picture stay still (a pause).
    case stillness
}

/// One finished file of a recording.
public struct RecordedFile: Sendable, Hashable {
    public var path: String
    /// Its position in the recording (1 for the first file).
    public var index: Int
    /// Media time it plays.
    public var duration: MediaTime
    public var bytes: Int64
    public var videoFrames: Int
    /// Audio sample frames in it, the silence the writer put in included.
    public var audioSamples: Int
    /// Of `audioSamples`, the sample frames of silence the writer put where
    /// audio was lost on its way (a microphone's overrun, a process stopped
    /// or starved), so that the audio after it stays in sync with the video.
    public var silenceInsertedSamples = 0
    /// Whether it was finalized (false only after a write failure).
    public var isComplete: Bool
    /// Whether the file was made at all: false for one that could not be
    /// created (its error says why), which is reported all the same.
    public var wasCreated = true
    /// When its first sample was captured, on the capture clock
    /// (`MonotonicClock`); with a pre-roll, before the resume that wrote it.
    /// nil for a file that holds nothing.
    public var firstCaptureTime: MediaTime?
    /// The markers placed in it (`CaptureFileOutput.addMarker(title:)`), in
    /// time order: its chapters in MP4, QuickTime, M4A, Matroska and WebM;
    /// in MPEG-TS, WAV, FLAC, Ogg and MP4 kept in fragments, which have no
    /// chapters, only this listing has them.
    public var markers: [RecordingMarker] = []
}

/// Totals of a recording so far.
public struct RecordingStatistics: Sendable, Hashable {
    /// Media time recorded, pauses left out, over every file.
    public var duration: MediaTime = .zero
    /// Bytes written, over every file.
    public var bytes: Int64 = 0
    public var videoFrames = 0
    /// Audio sample frames in the files, the silence the writer put in included.
    public var audioSamples = 0
    /// Of `audioSamples`, the sample frames of silence the writer put where
    /// audio was lost before it reached the file (those lost are counted in
    /// `droppedAudioSamples`), so that what follows plays in sync.
    public var silenceInsertedSamples = 0
    /// Samples lost: by the devices (sequence gaps, overruns) and by full
    /// queues, both inside the stretches recorded (not while paused, nor
    /// before the recording began, which a session that runs on may have
    /// seen), refused by the writer (damaged or out of order), and
    /// compressed frames that came before a keyframe (H.264/HEVC joined
    /// mid-GOP: nothing could decode them). Video counts frames, audio
    /// sample frames.
    public var droppedByDevice = 0
    public var droppedByQueue = 0
    public var droppedByWriter = 0
    public var droppedBeforeKeyframe = 0
    /// The files finished, in order, that are still there: those the
    /// retention deleted (`CaptureFileOutput.retention`) are left out.
    public var files: [String] = []
    /// How many files were finished, those deleted since included.
    public var fileCount = 0
    /// The number (from 1) of the file being written now; between files
    /// and once the recording has ended, the latest file's; 0 before the
    /// first file began. Never a file that does not exist yet.
    public var fileNumber = 0
    /// Files the retention deleted (the recording's, and earlier
    /// recordings' of the template), and the bytes they held. `bytes`
    /// still counts what the recording wrote into its own.
    public var deletedFileCount = 0
    public var deletedBytes: Int64 = 0
    public var isPaused = false
    /// While paused with a pre-roll (`CaptureFileOutput.preRollDuration`):
    /// the media time held in memory, from its first keyframe, and its bytes.
    public var preRollDuration: MediaTime = .zero
    public var preRollBytes = 0
    /// Video frames and audio sample frames the pre-roll let go to stay
    /// within `preRollMemoryLimit` (paused media, so not counted in `dropped`).
    public var droppedFromPreRoll = 0
    /// The media time the latest resume wrote from the pre-roll, before
    /// the moment it resumed at.
    public var lastPreRoll: MediaTime = .zero

    /// Of those, the audio sample frames (lost by a microphone, a queue or
    /// the writer); the rest are video frames.
    public var droppedAudioSamples = 0

    public var dropped: Int { droppedByDevice + droppedByQueue + droppedByWriter + droppedBeforeKeyframe }
    /// Video frames lost, for whatever cause.
    public var droppedVideoFrames: Int { dropped - droppedAudioSamples }

    /// Nothing recorded yet.
    public init() {}
}
