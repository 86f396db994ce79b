import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One recording of a `CaptureFileOutput`, from `startRecording` to its
/// end: the files it writes (switching without losing a sample, segments,
/// pauses), its limits, its statistics, and the writing thread that does
/// the work. The output makes one for each recording and hands it the
/// session's samples.
///
/// Samples reach it on the capture threads and are queued (a full queue
/// drops and counts); its writing thread encodes and writes them, so
/// capture never waits on an encoder. Requests (stop, pause, resume,
/// switch) take effect at the next video frame (with several cameras, the
/// next that is the newest so far; the next audio buffer when there is no
/// video), so a cut always falls between frames and audio is split at
/// exactly that time.
///
/// Threads: requests, statistics and delegate come and go under `lock`;
/// everything marked "writing thread only" is touched by that thread alone
/// once `begin(inputs:)` has started it.
///
/// Here: requests, beginning, and each sample's way into the files; the
/// loop and the order requests take effect in `FileRecording+WritingLoop.swift`;
/// pauses, resumes and the pre-roll in `FileRecording+Pausing.swift`; the
/// first file and the writing thread in `FileRecording+Beginning.swift`; cutting
/// and finishing files, limits and reports in `FileRecording+Files.swift`;
/// video from shared encoders in `FileRecording+SharedEncoders.swift`;
/// samples and inputs' ends from the capture threads in
/// `FileRecording+Capture.swift`; several cameras in `FileRecording+Cameras.swift`;
/// a loop recording's retention in `FileRecording+Retention.swift`.
final class FileRecording: @unchecked Sendable {
    // @unchecked: requests, statistics and the delegate are guarded by `lock`; the rest is the writing thread's alone once begin(inputs:) started it (see above).
    // MARK: Configuration, fixed when the recording starts

    weak var output: CaptureFileOutput?
    var files: RecordingFileFactory
    let sampleHandler: ((SampleBuffer, CaptureInput) -> Void)?
    let queueCapacity: Int
    let recordedMediaTypes: Set<MediaType>
    /// The time-lapse's frame picking and restamping, for a time-lapse
    /// (see `FileRecording+TimeLapse.swift`).
    let timeLapseFrames: TimeLapseFrames?

    init(output: CaptureFileOutput, destination: RecordingFileFactory.Destination, delegate: (any CaptureFileOutputRecordingDelegate)?) {
        self.output = output
        // A time-lapse is of pictures: the microphones are left out.
        let timeLapse = output.settings.timeLapse
        let recorded = timeLapse == nil ? output.recordedMediaTypes : output.recordedMediaTypes.intersection([.video])
        files = RecordingFileFactory(destination: destination, settings: output.settings,
                                     overwritesExistingFiles: output.overwritesExistingFiles, recordedMediaTypes: recorded)
        strongDelegate = delegate
        limits = RecordingLimits(maxDuration: output.maxRecordingDuration, maxSize: output.maxRecordingSize,
                                 maxFileDuration: output.maxRecordedDuration, maxFileSize: output.maxRecordedFileSize,
                                 minFreeSpace: output.minFreeDiskSpaceLimit, segmentDuration: output.segmentDuration,
                                 segmentSize: output.segmentFileSize, reclaimsSpace: output.retention.lowSpace == .deleteOldest,
                                 freeSpaceQuery: output.freeSpaceQuery)
        sampleHandler = output.sampleHandler
        queueCapacity = output.queueCapacity
        recordedMediaTypes = recorded
        timeLapseFrames = timeLapse.map(TimeLapseFrames.init)
        preRollDuration = output.preRollDuration.isNumeric && output.preRollDuration > .zero ? output.preRollDuration : nil
        preRollMemoryLimit = output.preRollMemoryLimit
        startsNewFileOnResume = output.startsNewFileOnResume
        stopsOnDeviceLoss = output.stopsOnDeviceLoss
        if case .template(let template) = destination, output.retention.isActive, template.folderPart != nil,
           template.hasCounter || template.hasTimeFields {
            // A loop recording counts the template's files already there, and numbers on after them.
            let found = TemplateFolderScan(template)
            if template.hasCounter { files.numberOffset = found.highestNumber }
            retained = RetainedFiles(retention: output.retention, existing: found.files)
        }
        markerAnchor.path = files.path(number: 1)
    }

    /// How much media a pause keeps for the resume to write first (nil: none).
    let preRollDuration: MediaTime?
    let preRollMemoryLimit: Int
    /// Each pause finishes the file; the next resume begins a new one.
    let startsNewFileOnResume: Bool
    /// A camera lost ends the recording even while others capture.
    let stopsOnDeviceLoss: Bool

    // MARK: Requests (any thread)

    /// Switches to `path` (nil: the next file the template names) at the
    /// next video frame; from the sample handler, before the sample it handles.
    func requestSwitch(to path: String?) {
        let fromWritingThread = lock.withLock { writingThreadID.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if fromWritingThread {
            immediateSwitch = .some(path)
        } else {
            lock.withLock { commands.append(.switchFile(path)) }
        }
        // The next file begins at a keyframe a shared encoder makes for it.
        encoders?.requestKeyframe()
    }

    func stop(reason: RecordingStopReason, error: RecordingError?) {
        lock.withLock {
            commands.append(.stop(reason, error))
            ending = true
        }
    }

    /// Asks for a pause, remembering `cause` for the delegate. Pauses and
    /// resumes keep their causes apart: a resume waiting for its keyframe
    /// and a pause asked for meanwhile each report their own.
    func pause(cause: RecordingPauseCause) {
        lock.withLock {
            pauseCause = cause
            commands.append(.pause)
        }
    }

    func resume(cause: RecordingPauseCause) {
        lock.withLock {
            resumeCause = cause
            commands.append(.resume)
        }
        encoders?.requestKeyframe()
    }

    /// What asked for the pause taking effect now (a request unless a trigger did).
    func takePauseCause() -> RecordingPauseCause {
        lock.withLock {
            defer { pauseCause = nil }
            return pauseCause ?? .requested
        }
    }

    func takeResumeCause() -> RecordingPauseCause {
        lock.withLock {
            defer { resumeCause = nil }
            return resumeCause ?? .requested
        }
    }

    /// Whether the recording has ended (its delegate heard it, or is hearing it now).
    var isOver: Bool { lock.withLock { over } }
    var over = false
    /// Whether it is ending: stopped, at a limit or by an error, its last
    /// files still being finished. A new `startRecording` then starts a new
    /// recording rather than switching this one's file, as a delegate that
    /// restarts from `didFinishRecordingTo` expects.
    var isEnding: Bool { lock.withLock { over || ending } }
    var ending = false
    var pauseCause: RecordingPauseCause?
    var resumeCause: RecordingPauseCause?

    var isPaused: Bool { lock.withLock { stats.isPaused } }
    var outputFilePath: String? { lock.withLock { currentPath } }
    var outputFilePaths: [String] { lock.withLock { currentPaths } }

    /// Totals so far.
    var statistics: RecordingStatistics {
        var snapshot = lock.withLock { () -> RecordingStatistics in
            var snapshot = stats
            let lost = recordedLosses.count
            (snapshot.droppedByDevice, snapshot.droppedByQueue) = (lost.device, lost.queue)
            snapshot.droppedAudioSamples += lost.audio
            return snapshot
        }
        snapshot.droppedBeforeKeyframe += encoders?.framesBeforeKeyframe ?? 0
        if let holding = preRoll?.holding {
            snapshot.preRollDuration = holding.duration
            snapshot.preRollBytes = holding.bytes
            snapshot.droppedFromPreRoll = holding.droppedForMemory
        }
        return snapshot
    }

    /// Ends a recording that never began (its first file could not be
    /// created, or it was stopped before the session ran): the delegate
    /// hears why.
    func endBeforeBeginning(_ error: RecordingError?, reason: RecordingStopReason = .error) {
        guard !hasBegun else { return }
        ended = true
        lock.withLock { ending = true }
        encoders?.leaveAll()
        preRoll?.leaveAll()
        // The file it was to write reaches didFinishRecordingTo all the same, with why not.
        let path = error?.path ?? files.path(number: 1)
        reportUnmade(path: path, index: 1, error: error ?? .noDataCaptured(path: path))
        endRecordingReported(reason: reason, error: error)
    }

    /// The session stopped: no more samples come; what is open is finished.
    func sessionDidStop() {
        queue?.close()
        thread?.join()
    }

    /// Waits until the writing thread has finished every file.
    func waitUntilFinished() {
        thread?.join()
    }

    // MARK: State

    /// Guards the requests, the statistics and what other threads ask for.
    let lock = Lock()
    var strongDelegate: (any CaptureFileOutputRecordingDelegate)?
    var commands: [Command] = []
    var stats = RecordingStatistics()
    /// What the recorded inputs' devices and the queues before the writer
    /// lost inside the stretches written (set in `begin(inputs:)`).
    var recordedLosses = RecordedLosses()
    /// Samples the writing queue had no room for, by capture time.
    let queueLosses = (video: SampleLossLog(), audio: SampleLossLog())
    /// A recording that does not begin paused counts losses from its first
    /// sample on, before anything is written (a frame the encoder refuses is
    /// lost from the file): when that came, and whether begin(inputs:)
    /// has said so yet (nil: not yet). Under `lock`; `firstSampleNoted`
    /// lets the capture threads look only once.
    var firstSampleTime: MediaTime?
    var opensLossesAtFirstSample: Bool?
    let firstSampleNoted = Atomic(false)
    var ended = false
    var currentPath: String?
    /// Every file of the current one (one per camera with `%c`).
    var currentPaths: [String] = []
    /// The writing thread, once it runs (asked from other threads: under `lock`).
    var writingThreadID: pthread_t?
    /// Where a marker placed now goes, and markers placed that the writing
    /// thread has not taken yet (see `FileRecording+Markers.swift`).
    var markerAnchor = MarkerAnchor(fileIndex: 1, path: "", fileTime: .zero, recordingTime: .zero)
    var pendingMarkers: [RecordingMarker] = []

    // Writing thread only.
    var inputs: [CaptureInput] = []
    /// For each input, how many of its samples may gather before the writing thread is woken.
    var samplesPerWakeup: [Int] = []
    var queue: BoundedQueue<(Int, SampleBuffer)>?
    var thread: CaptureThread?
    var current: RecordingFileWriter?
    var draining: [RecordingFileWriter] = []
    /// Markers taken whose file is not open yet (the next resume opens it),
    /// and the name that file will have, as far as it can be told now.
    var waitingMarkers: [RecordingMarker] = []
    var nextFileGuess: (number: Int, path: String)?
    var fileCount = 0
    var closedVideoFrames = 0
    var closedAudioSamples = 0
    var closedSilenceSamples = 0
    var closedDuration = MediaTime.zero
    /// The time of files removed for holding nothing decodable (every part
    /// of them): in no file, so left out of the reported duration, though
    /// the limits count it as recorded.
    var removedDuration = MediaTime.zero
    var closedBytes: Int64 = 0
    var pendingAudio: [(Int, SampleBuffer)] = []
    var endedInputs: Set<Int> = []
    /// Cameras whose capture ended, and those lost that the delegate has not heard of yet (under `lock`).
    var endedCameras: Set<Int> = []
    var lostCameras: [(Int, RecordingError)] = []
    /// The first frames of several cameras, held until each has sent one (writing thread only).
    var heldFirstFrames: [(Int, SampleBuffer)] = []
    /// Lost cameras whose files finish once the writing thread has handled
    /// `after` samples (all those queued when it heard of the loss), and the
    /// samples it has handled (writing thread only).
    var lostCamerasToFinish: [(camera: Int, after: Int)] = []
    var samplesHandled = 0
    /// Once this many samples are handled (all those queued when the writing
    /// thread heard of an input's end), a stop that waits for the queue to
    /// drain applies even if the queue never runs empty: another camera may
    /// keep it full on a machine where writing lags capture (writing thread only).
    var drainMark: Int?
    var limits: RecordingLimits
    /// A loop recording's files and what its retention keeps (see
    /// `FileRecording+Retention.swift`); nil without a retention.
    var retained: RetainedFiles?
    /// When the age bound was last checked (monotonic nanoseconds).
    var lastRetentionCheck: Int64 = 0
    var stopping: (reason: RecordingStopReason, error: RecordingError?)?
    var paused = false
    var sessionStopped = false
    var latestSourceTime: MediaTime?
    var immediateSwitch: String??
    /// Paused with no file open: the recording started paused, or each
    /// event gets a file and the last one was finished at the pause. The
    /// resume opens the next file (named `nextPath` when a switch asked for
    /// a name meanwhile).
    var betweenFiles = false
    var nextPath: String?
    /// Up to this time (the resume frame) a pre-roll is being written: a
    /// segment that falls due in it begins at one of its keyframes.
    var keyframeCutsUntil: MediaTime?
    /// The shared encoders the video comes from (set in `begin(inputs:)`;
    /// requests read it from other threads), and the codec each shared
    /// input's frames arrive in, by input position (set in `begin(inputs:)`
    /// before capture threads reach the recording).
    var encoders: RecordingEncoders? { lock.withLock { sharedEncoders } }
    var sharedEncoders: RecordingEncoders?
    var sharedVideo: [Int: String] = [:]
    /// The pre-roll kept while paused (set in `begin(inputs:)` when asked
    /// for; statistics read it from other threads).
    var preRoll: PreRollRing? { lock.withLock { preRollRing } }
    var preRollRing: PreRollRing?

    enum Command {
        case switchFile(String?)
        case pause, resume
        case stop(RecordingStopReason, RecordingError?)
        case stopWhenDrained(RecordingStopReason, RecordingError?)

        var waitsForDrain: Bool {
            if case .stopWhenDrained = self { return true }
            return false
        }

        var isPauseOrResume: Bool {
            switch self {
            case .pause, .resume: return true
            case .switchFile, .stop, .stopWhenDrained: return false
            }
        }

        /// Whether it begins a file or a stretch of one.
        var beginsAtKeyframe: Bool {
            switch self {
            case .switchFile, .resume: return true
            case .pause, .stop, .stopWhenDrained: return false
            }
        }
    }

    // MARK: From the capture threads (see `FileRecording+Capture.swift`)

    var endedInputsPending: Set<Int> = []
    var inputEndReason: RecordingStopReason?
    var inputEndError: RecordingError?

    // MARK: The writing thread

    /// Whether a video input is recorded, settled in `begin(inputs:)`
    /// (asked for every sample, so not worked out again each time).
    var hasVideo = false
    /// Several cameras record into the files (raw or JPEG frames, each camera's in capture order).
    var severalCameras = false
    /// Whether the video has inter frames (H.264/HEVC from a camera or a
    /// file), so that a recording starts at its first keyframe; settled in
    /// `begin(inputs:)`.
    var startsAtKeyframe = false
    /// Whether that video is copied as it is: then every file, segment and
    /// resumed stretch begins at a keyframe too, or its first frames could
    /// not be decoded.
    var cutsAtKeyframes = false

    /// The writing thread's waits in a row that ended with no sample (writing thread only).
    var idleRounds = 0
    /// Audio waiting for the video (writing thread only), and the latest video frame's time.
    var heldAudio: [(Int, SampleBuffer)] = []
    /// The video inputs whose frames audio waits for (see `handle`): every recorded
    /// camera, or with a time-lapse (whose frames come seconds apart) the shared
    /// encoders' alone. Settled in `begin(inputs:)`.
    var audioWaitsFor: Set<Int> = []
    /// Without a pre-roll: the audio handled while paused, the last few
    /// seconds of it (copies), for a resume that takes effect at a frame
    /// captured before it (see `keepPausedAudio`). Writing thread only.
    var pausedAudio: [(Int, AudioSampleBuffer)] = []
    var videoReach: MediaTime?
    /// The capture time of the newest lead sample handled, and how many lead
    /// samples have come since it (writing thread only).
    var latestLeadTime: MediaTime?
    var leadSamplesSinceNewest = 0
}
