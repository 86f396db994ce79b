#if canImport(Glibc)
import Glibc
#endif

/// Records a session's samples to files, like AVCaptureFileOutput. Added to
/// a session (running or not), it starts recording to a file with
/// `startRecording(to:recordingDelegate:)` at any time, stops with
/// `stopRecording()`, and may start again to a new file while the session
/// keeps its devices open. While recording it pauses and resumes, switches
/// to a new file without losing a sample (`startRecording` again, or
/// `switchToNextFile()`), cuts segments by duration or size, and stops at
/// limits on duration, size and free disk space. `MovieFileOutput` records
/// every input; `AudioFileOutput` only audio.
///
/// An input that ends by itself ends the recording once its samples are
/// written: a device that went away finishes the file with the reason
/// `deviceDisconnected`, a failure with `error`, a file played to its end
/// with `endOfInput`.
///
/// Each recording is a `FileRecording` with its own writing thread (see
/// there for how samples flow); this type holds the configuration and the
/// link to the session.
public class CaptureFileOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: the link to the session and the recordings are guarded by `lock`; configuration is read when a recording starts.
    // MARK: Configuration (read when a recording starts)

    /// Codecs, fragments, metadata.
    public var settings = RecordingSettings()
    /// Stop when the file being written (pauses left out) reaches this
    /// media time, as AVFoundation's limit on each recorded file: the
    /// delegate's `didFinishRecordingTo` hears `limitReached(.maxDuration)`
    /// (successfully finished), and may start the next recording there.
    /// A file started by switching (`startRecording` while recording, a
    /// segment) counts from its own start. Invalid for no limit.
    public var maxRecordedDuration: MediaTime = .invalid
    /// Stop before the file being written would exceed this many bytes (with
    /// one file per camera, the largest of them); 0 for no limit.
    public var maxRecordedFileSize: Int64 = 0
    /// Stop when the whole recording (every file, pauses left out) reaches
    /// this media time, whatever its files; invalid for no limit. Not in
    /// AVFoundation: capctl's `--max-duration` with segments.
    public var maxRecordingDuration: MediaTime = .invalid
    /// Stop before the recording's files together would exceed this many
    /// bytes; 0 for no limit. Not in AVFoundation: capctl's `--max-size`.
    public var maxRecordingSize: Int64 = 0
    /// Stop before the volume's free space falls below this many bytes; 0 for no check.
    public var minFreeDiskSpaceLimit: Int64 = 0
    /// Start a new file when the current one reaches this media time (invalid: never).
    public var segmentDuration: MediaTime = .invalid
    /// Start a new file before the current one would exceed this many bytes (0: never).
    public var segmentFileSize: Int64 = 0
    /// Replace files that exist at an output path instead of failing.
    public var overwritesExistingFiles = false
    /// Loop recording: which of the files a template names are kept, and
    /// what the free-space floor does (see `RecordingRetention`). Applies to
    /// a recording started with `startRecording(toTemplate:)` whose template
    /// tells its files apart (`%n` or strftime fields in the file's name);
    /// the delegate hears each file deleted. None by default.
    public var retention = RecordingRetention()
    /// How a recording asks the free space of the volume holding a path
    /// (statvfs(3); tests give a volume of their own).
    var freeSpaceQuery: @Sendable (String) -> Int64? = { RecordingLimits.freeSpace(near: $0) }
    /// Sees each sample on the writing thread before it is written; calling
    /// `startRecording(to:)` from it switches files exactly before that sample
    /// (with video from a shared encoder, at the keyframe it makes next).
    /// Video that a shared encoder compresses reaches it compressed.
    public var sampleHandler: ((SampleBuffer, CaptureInput) -> Void)?
    /// How many samples may wait for the writing thread before new ones are dropped.
    public var queueCapacity = 240
    /// A pre-roll (pre-record buffer): while the recording is paused, the
    /// latest stretch of this much media is kept in memory, beginning at a
    /// keyframe (so at least this long once that much has passed, at most
    /// one keyframe interval longer); a resume writes it first, and the
    /// recording goes on from it without a gap or a repeated sample. Audio
    /// is kept raw and cut where the video begins. Invalid or zero: none.
    /// Video must come from an encoder (not copied from the camera).
    public var preRollDuration: MediaTime = .invalid
    /// The most bytes of media the pre-roll holds; past it the oldest
    /// stretch (keyframe to keyframe) is let go and counted
    /// (`RecordingStatistics.droppedFromPreRoll`).
    public var preRollMemoryLimit = CaptureFileOutput.defaultPreRollMemoryLimit
    /// 128 MiB: 30 s of 1080p video at 30 Mb/s with its audio.
    public static let defaultPreRollMemoryLimit = 128 * 1_048_576
    /// Each pause finishes the file, and the next resume begins a new one
    /// (the next the template names), so that each stretch, with its
    /// pre-roll, is a file that plays on its own, complete when it ends.
    public var startsNewFileOnResume = false
    /// A recording started while this is true begins paused (armed): the
    /// devices run and the pre-roll fills, and nothing is written until
    /// `resumeRecording()` or the motion trigger resumes it. The delegate
    /// hears the pause with the cause `armed`.
    public var startsRecordingPaused = false
    /// A motion trigger: while set, motion in the first camera's picture
    /// resumes a paused recording, and a picture that stayed still for the
    /// detector's `stillDuration` pauses it (with `startsNewFileOnResume`,
    /// each event is a file). The output hands the detector the session's
    /// frames; add only this output to the session. A camera whose
    /// pictures the detector cannot read (compressed, or raw without 8-bit
    /// luma) fails the recording's start with `motionCannotRead`. Set
    /// before the recording starts; set on a running session, the new
    /// detector starts watching at once and the one it replaces stops.
    public var motionDetector: MotionDetector? {
        get { lock.withLock { motion?.detector } }
        set {
            let link = newValue.map { MotionTriggerLink(detector: $0, output: self) }
            let (replaced, inputs) = lock.withLock { () -> (MotionTriggerLink?, [CaptureInput]?) in
                defer { motion = link }
                return (motion, sessionInputs)
            }
            guard let inputs else { return }
            replaced?.detector.output.sessionDidStopRunning()
            // A detector whose thread cannot start sees nothing; the recording goes on untriggered.
            if let link { try? startWatching(link, inputs: inputs) }
        }
    }
    /// With several cameras, one that goes away ends the whole recording
    /// (as `deviceDisconnected`) instead of only its track. A recording
    /// left without any camera ends either way.
    public var stopsOnDeviceLoss = false

    /// The media types this output records.
    public var recordedMediaTypes: Set<MediaType> { [.video, .audio] }
    public override var connectedMediaTypes: Set<MediaType> { recordedMediaTypes }

    // MARK: State (under `lock`)

    private let lock = Lock()
    /// The session's opened inputs while it runs; nil while it does not.
    private var sessionInputs: [CaptureInput]?
    /// The recording asked for last, begun or waiting for the session to run.
    private var active: FileRecording?
    /// The recording that receives samples: `active` once it has begun.
    private var receiving: FileRecording?
    /// Recordings that ended while still finishing their files when the
    /// next one began (started from their delegate, or right after a
    /// stop): they receive samples until they are over, so that their
    /// inputs pass the cut and their last files finish at once.
    private var finishing: [FileRecording] = []
    /// The motion trigger's detector and its link back to this output.
    private var motion: MotionTriggerLink?
    /// The camera the motion trigger watches (the session's first) while it runs.
    private var motionCamera: CaptureInput?

    public override init() { super.init() }

    // MARK: Recording

    /// Starts recording to `path`; while recording, switches to `path` at
    /// the next video frame. On a session that is not running yet, the
    /// recording begins when it starts. The path is taken as is. A file
    /// that cannot be created ends the recording at once: the delegate
    /// hears `didFinishRecordingTo` and `didEndRecordingWith` with the
    /// error before this returns. Called once a recording is stopping
    /// (from its delegate's `didFinishRecordingTo` at a limit, or after
    /// `stopRecording()`), it starts a new recording.
    public func startRecording(to path: String, recordingDelegate: (any CaptureFileOutputRecordingDelegate)?) {
        if let underWay = start(FileRecording(output: self, destination: .path(path), delegate: recordingDelegate)) {
            underWay.requestSwitch(to: path)
        }
    }

    /// Starts recording to the files `template` names (`%n` numbers them);
    /// further files (segments, `switchToNextFile()`) follow the template.
    /// Does nothing while a recording is under way.
    public func startRecording(toTemplate template: FileNameTemplate, recordingDelegate: (any CaptureFileOutputRecordingDelegate)?) {
        start(FileRecording(output: self, destination: .template(template), delegate: recordingDelegate))
    }

    /// Makes `recording` the output's recording, unless one is under way
    /// (and not ending): that one is answered instead, and `recording` is
    /// dropped unstarted. Checked and set under one lock, so that two calls
    /// at once cannot both start a recording and orphan one.
    @discardableResult
    private func start(_ recording: FileRecording) -> FileRecording? {
        // Asked before it begins: it begins armed, with no file until a resume.
        if startsRecordingPaused { recording.pause(cause: .armed) }
        let (underWay, inputs) = lock.withLock { () -> (FileRecording?, [CaptureInput]?) in
            if let active, !active.isEnding { return (active, nil) }
            if let previous = receiving, !previous.isOver { finishing.append(previous) }
            receiving = nil
            active = recording
            return (nil, sessionInputs)
        }
        if let underWay { return underWay }
        guard let inputs else { return nil }
        begin(recording, inputs: inputs)
        return nil
    }

    /// Creates the recording's first file and starts it receiving samples;
    /// a failure ends it with that error.
    @discardableResult
    private func begin(_ recording: FileRecording, inputs: [CaptureInput]) -> RecordingError? {
        do throws(RecordingError) {
            try lock.withLock { motion }?.check(inputs)
            try recording.begin(inputs: inputs)
        } catch {
            recording.endBeforeBeginning(error)
            return error
        }
        lock.withLock { if active === recording { receiving = recording } }
        return nil
    }

    /// Ends the current file at the next video frame and goes on in the next
    /// one the template names.
    public func switchToNextFile() { current?.requestSwitch(to: nil) }

    /// Finishes the file at the next video frame; the delegate hears
    /// `didFinishRecordingTo` and `didEndRecordingWith`.
    public func stopRecording() { stopRecording(reason: .stopped, error: nil) }

    /// Stops with a reason other than the user's (a device that went away).
    public func stopRecording(reason: RecordingStopReason, error: RecordingError?) {
        guard let recording = current else { return }
        if recording.hasBegun {
            recording.stop(reason: reason, error: error)
        } else {
            lock.withLock { if active === recording { active = nil } }
            recording.endBeforeBeginning(error, reason: reason)
        }
    }

    /// Leaves what comes next out of the file, from the next video frame on.
    /// Called right after `startRecording`, the recording begins paused:
    /// nothing is written until `resumeRecording()` (the pre-roll, if any,
    /// fills meanwhile).
    public func pauseRecording() { current?.pause(cause: .requested) }

    public func resumeRecording() { current?.resume(cause: .requested) }

    /// Marks the recording under way at its current media time: the media
    /// time its files hold so far (the file's own timeline, pauses left
    /// out, as `recordedDuration` counts them), as the writing thread last
    /// wrote. While paused, the marker goes where the resume will go on
    /// (the pause point); with no file open (paused with each event in its
    /// own file, or begun paused), at the start of the file the next resume
    /// opens. With segments, it goes into the file being written, at its
    /// time in that file. Any thread; returns at once.
    ///
    /// The finished file carries its markers as chapters (each from its
    /// marker to the next, the last to the file's end; none before the
    /// first) in MP4, QuickTime, M4A, Matroska and WebM, and lists them in
    /// `RecordedFile.markers` (the only place MPEG-TS, WAV, FLAC, Ogg and
    /// MP4 kept in fragments have them). An MP4 or QuickTime recording
    /// written in fragments keeps its markers in the file as they come, so
    /// that `MovieRepair` gives one that was killed its chapters; other
    /// files killed before they finish lose them. Throws when no recording is under way
    /// (none started, or it is stopping) or the title is empty, longer than
    /// `RecordingMarker.maxTitleBytes` bytes of UTF-8, or holds a NUL.
    @discardableResult
    public func addMarker(title: String) throws(RecordingMarkerError) -> RecordingMarker {
        guard let recording = current else { throw .notRecording }
        return try recording.addMarker(title: title)
    }

    /// A pause or resume the motion trigger asks for, if it changes anything.
    func motionTriggered(resume: Bool) {
        guard let recording = current, recording.isPaused == resume else { return }
        if resume { recording.resume(cause: .motion) } else { recording.pause(cause: .stillness) }
    }

    /// The delegate of the recording under way, for the motion trigger's events.
    func withRecordingDelegate(_ body: (CaptureFileOutput, any CaptureFileOutputRecordingDelegate) -> Void) {
        lock.withLock { active }?.delegateCall(body)
    }

    /// The recording under way and not ending, if any.
    private var current: FileRecording? { lock.withLock { active.flatMap { $0.isEnding ? nil : $0 } } }

    public var isRecording: Bool { current != nil }
    public var isRecordingPaused: Bool { current?.isPaused ?? false }
    /// The file being written now; while paused with no file open (each
    /// event in its own file, or paused from the start), the last one
    /// finished or, before any, the first the next resume makes; once the
    /// recording ended, the last one.
    public var outputFilePath: String? { lock.withLock { active }?.outputFilePath }
    /// Every file `outputFilePath` stands for: one per camera when the
    /// template has `%c`, else that one.
    public var outputFilePaths: [String] { lock.withLock { active }?.outputFilePaths ?? [] }
    /// Media time recorded so far, over every file, pauses left out.
    public var recordedDuration: MediaTime { statistics.duration }
    /// Bytes written so far, over every file.
    public var recordedFileSize: Int64 { statistics.bytes }
    /// Totals of the recording under way, or of the last one.
    public var statistics: RecordingStatistics { lock.withLock { active }?.statistics ?? RecordingStatistics() }

    /// Waits until the recording's writing thread has finished every file
    /// (after `stopRecording`, a limit, or the session stopping).
    public func waitUntilFinished() {
        lock.withLock { active }?.waitUntilFinished()
    }

    /// Bytes available to unprivileged users on the volume holding `path`.
    public static func freeSpace(near path: String) -> Int64? { RecordingLimits.freeSpace(near: path) }

    // MARK: The session

    /// The session runs (or this output joined it while running): a
    /// recording already asked for begins now. Its first file that cannot
    /// be created keeps the session from starting.
    public override func sessionWillStartRunning(inputs: [CaptureInput]) throws(CaptureError) {
        let (waiting, link) = lock.withLock { () -> (FileRecording?, MotionTriggerLink?) in
            sessionInputs = inputs
            motionCamera = inputs.first { $0.mediaType == .video }
            return (active.flatMap { $0.hasBegun || $0.isOver ? nil : $0 }, motion)
        }
        if let waiting, let error = begin(waiting, inputs: inputs) {
            // Refused: the session does not count this output as started.
            lock.withLock { (sessionInputs, motionCamera) = (nil, nil) }
            throw .source("output", reason: error.description)
        }
        // The detector starts once the recording it triggers has begun (or none waits).
        guard let link else { return }
        do {
            try startWatching(link, inputs: inputs)
        } catch {
            sessionDidStopRunning()
            throw error
        }
    }

    /// Starts the motion trigger's detector on the session's inputs.
    private func startWatching(_ link: MotionTriggerLink, inputs: [CaptureInput]) throws(CaptureError) {
        link.detector.output.updateConnections(inputs: inputs)
        try link.detector.output.sessionWillStartRunning(inputs: inputs)
    }

    /// Inputs changed while running: a recording keeps the tracks it began
    /// with; the next one records these.
    public override func sessionDidChangeInputs(_ inputs: [CaptureInput]) {
        let watcher = lock.withLock { () -> VideoDataOutput? in
            guard sessionInputs != nil else { return nil }
            sessionInputs = inputs
            motionCamera = inputs.first { $0.mediaType == .video }
            return motion?.detector.output
        }
        watcher?.updateConnections(inputs: inputs)
        watcher?.sessionDidChangeInputs(inputs)
    }

    public override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        let (recording, ending, watcher) = lock.withLock { () -> (FileRecording?, [FileRecording], VideoDataOutput?) in
            if !finishing.isEmpty { finishing.removeAll { $0.isOver } }
            // The detector sees the camera it watches, and only that one.
            return (receiving, finishing, input === motionCamera ? motion?.detector.output : nil)
        }
        watcher?.capture(sample, from: input)
        for previous in ending { previous.capture(sample, from: input) }
        recording?.capture(sample, from: input)
    }

    public override func input(_ input: CaptureInput, didEnd end: CaptureEnd) {
        let (recording, ending, watcher) = lock.withLock { (receiving, finishing, input === motionCamera ? motion?.detector.output : nil) }
        watcher?.input(input, didEnd: end)
        for previous in ending { previous.input(input, didEnd: end) }
        recording?.input(input, didEnd: end)
    }

    /// The session stopped: the recording under way finishes its files.
    public override func sessionDidStopRunning() {
        let (recordings, watcher) = lock.withLock { () -> ([FileRecording], VideoDataOutput?) in
            sessionInputs = nil
            motionCamera = nil
            defer { receiving = nil; finishing = [] }
            return (finishing + [receiving].compactMap { $0 }, motion?.detector.output)
        }
        watcher?.sessionDidStopRunning()
        for recording in recordings { recording.sessionDidStop() }
    }
}

/// Records every input of a session to movie files (MP4, QuickTime,
/// Matroska, WebM, MPEG-TS), like AVCaptureMovieFileOutput.
public final class MovieFileOutput: CaptureFileOutput, @unchecked Sendable {
    // @unchecked: restated from CaptureFileOutput.
}

/// Records the audio inputs of a session to audio files (WAV, FLAC, M4A,
/// Ogg/Opus), like AVCaptureAudioFileOutput.
public final class AudioFileOutput: CaptureFileOutput, @unchecked Sendable {
    // @unchecked: restated from CaptureFileOutput.
    public override var recordedMediaTypes: Set<MediaType> { [.audio] }
}

extension MediaTime {
    /// The time on the capture clock's nanosecond timescale, so that sums
    /// with capture stamps stay exact and representable.
    var nanoseconds: MediaTime { isNumeric ? converted(toTimescale: MonotonicClock.timescale) : self }
}


