import Dispatch
import Synchronization

/// A whole recording on a capture session, as `capctl record` makes one:
/// a file output (movie or audio, by the destination's extension) with its
/// limits, segments, pre-roll, start paused and motion trigger; live
/// streams beside it; the rules that join them (the streams end where the
/// file does; a required stream that fails ends the recording; without a
/// file, the recording ends when its streams do); progress as values, and
/// the end as a typed reason.
///
///     let session = CaptureSession()
///     session.addInput(try CaptureInput(camera: "video:0"))
///     let recorder = try CaptureRecorder(CaptureRecorderConfiguration(destination: "clip.mp4"))
///     try recorder.start(on: session)
///     …
///     recorder.stop()
///     let end = recorder.finish()
///
/// Several recorders may share one running session.
package final class CaptureRecorder: Sendable {
    package let configuration: CaptureRecorderConfiguration
    /// The file output, when there is a destination.
    package let fileOutput: CaptureFileOutput?
    /// One output per stream, in the configuration's order.
    package let streamOutputs: [LiveStreamOutput]
    let template: FileNameTemplate?
    let fileType: FileType?

    struct State {
        weak var delegate: (any CaptureRecorderDelegate)?
        weak var session: CaptureSession?
        var cameras: [CaptureInput] = []
        /// The microphones' level readers and silence monitors, while the recording runs.
        var microphones: [MicrophoneWatch] = []
        var lostCameras: [Int] = []
        var fileEnd: (reason: RecordingStopReason, error: RecordingError?)?
        /// How each stream that ended did, with its number (from 1).
        var streamEnds: [(index: Int, reason: LiveStreamEndReason)] = []
        var requiredFailure: CaptureRecorderStreamFailure?
        /// A stop was asked for (also before the start: it takes effect as the recording begins).
        var stopped = false
        var ended = false
        var end: CaptureRecorderEnd?
    }
    let state: Mutex<State>
    /// Signalled once, when the recording ends.
    private let endSignal = DispatchSemaphore(value: 0)
    /// The delegates the outputs call (they hold this recorder weakly).
    private let events: RecorderEvents
    /// Where silence events reach the delegate, in order.
    let microphoneQueue = DispatchQueue(label: "capctl.recorder.microphones")

    /// A recorder for `configuration`; `delegate` (held weakly) hears what
    /// happens. Throws when the destination is no template or names no
    /// container, or the configuration contradicts itself.
    package init(_ configuration: CaptureRecorderConfiguration, delegate: (any CaptureRecorderDelegate)? = nil) throws(RecordingError) {
        self.configuration = configuration
        state = Mutex(State(delegate: delegate))
        events = RecorderEvents()
        if let refusal = Self.timeLapseRefusal(configuration) { throw .unsupported(refusal) }
        if let destination = configuration.destination {
            let template = try FileNameTemplate(destination)
            guard let fileType = FileType(path: destination) else {
                throw .unsupported("cannot tell the container from '\(destination)'")
            }
            self.template = template
            self.fileType = fileType
            let segmented = configuration.segmentDuration != nil || configuration.segmentSize != nil
            if (segmented || configuration.filePerEvent) && !template.namesEachFile {
                throw .unsupported("\(destination) must name each file: add %n (the file number) or time fields")
            }
            if let problem = configuration.retention.problem(template: template, series: segmented || configuration.filePerEvent) {
                throw .unsupported("\(destination): \(problem)")
            }
            fileOutput = fileType.availableMediaTypes.contains(.video) ? MovieFileOutput() : AudioFileOutput()
        } else {
            template = nil
            fileType = nil
            fileOutput = nil
            if configuration.retention.isActive { throw .unsupported("a retention keeps files: give a destination") }
        }
        streamOutputs = configuration.streams.map { stream in
            let output = LiveStreamOutput(destination: stream.destination)
            output.settings = stream.settings
            if let interval = stream.keyframeInterval { output.keyframeInterval = interval }
            if let timeout = stream.connectionTimeout { output.connectionPolicy.timeout = timeout }
            // The streams end where the file does (and, without a file, the recording with them).
            if let maxDuration = configuration.maxDuration { output.maxStreamedDuration = maxDuration }
            return output
        }
        if let fileOutput { configure(fileOutput) }
        events.attach(self)
    }

    /// Why a time-lapse cannot be recorded as configured: it is written to
    /// a file (a stream plays live, at capture time), and keeps one frame an
    /// interval, which neither a pre-roll nor a motion trigger watches.
    static func timeLapseRefusal(_ configuration: CaptureRecorderConfiguration) -> String? {
        guard let timeLapse = configuration.settings.timeLapse else { return nil }
        if let problem = timeLapse.problem { return problem }
        if configuration.destination == nil || !configuration.streams.isEmpty {
            return "a time-lapse is written to a file, and a stream plays live; record the time-lapse without streams"
        }
        if configuration.preRoll != nil || configuration.motion != nil {
            return "a time-lapse keeps one frame an interval, which a pre-roll or a motion trigger cannot follow; record one or the other"
        }
        return nil
    }

    private func configure(_ output: CaptureFileOutput) {
        output.settings = configuration.settings
        output.maxRecordingDuration = configuration.maxDuration ?? .invalid
        output.maxRecordingSize = configuration.maxSize ?? 0
        output.minFreeDiskSpaceLimit = configuration.minFreeSpace
        output.segmentDuration = configuration.segmentDuration ?? .invalid
        output.segmentFileSize = configuration.segmentSize ?? 0
        output.overwritesExistingFiles = configuration.overwritesExistingFiles
        output.retention = configuration.retention
        output.stopsOnDeviceLoss = configuration.stopsOnDeviceLoss
        if let preRoll = configuration.preRoll { output.preRollDuration = preRoll }
        if let limit = configuration.preRollMemoryLimit { output.preRollMemoryLimit = limit }
        output.startsNewFileOnResume = configuration.filePerEvent
        output.startsRecordingPaused = configuration.startsPaused
        output.motionDetector = configuration.motion.map { MotionDetector(configuration: $0) }
    }

    // MARK: Starting

    /// Checks, before any device opens, that the first files can be made:
    /// none exists (unless overwriting), none is a folder, and their folder
    /// exists and is writable. `cameras` is the number of cameras, for a
    /// template with a file per camera.
    package func checkDestination(cameras: Int = 1) throws(RecordingError) {
        guard let template else { return }
        let count = template.hasCameraNumber ? max(1, cameras) : 1
        // A loop recording numbers on after the template's files already there.
        let first = configuration.retention.isActive && template.hasCounter ? TemplateFolderScan(template).highestNumber + 1 : 1
        for camera in 1...count {
            try RecordingDestinationCheck.check(template.path(number: first, camera: camera),
                                                overwrites: configuration.overwritesExistingFiles)
        }
    }

    /// Adds the recording's outputs to `session` and starts it: the
    /// streams first (settings a stream cannot take stop the start before a
    /// file is made), then the file output, whose recording begins as the
    /// session runs. Starts the session when it is not running (opening its
    /// devices; a camera given twice or without bandwidth is refused there).
    package func start(on session: CaptureSession) throws(CaptureRecorderError) {
        do throws(CaptureRecorderError) {
            try begin(on: session)
        } catch {
            // Refused: nothing of it stays on the session, which may run on for others.
            fileOutput?.stopRecording()
            for output in streamOutputs { output.stopStreaming() }
            if let fileOutput { session.removeOutput(fileOutput) }
            for output in streamOutputs { session.removeOutput(output) }
            markEnded()
            throw error
        }
    }

    private func begin(on session: CaptureSession) throws(CaptureRecorderError) {
        let inputs = session.inputs
        let cameras = inputs.filter { $0.mediaType == .video }
        try watchMicrophones(inputs.filter { $0.mediaType == .audio })
        if fileOutput is AudioFileOutput, !cameras.isEmpty, let fileType, let destination = configuration.destination {
            throw .recording(.unsupported("\(destination): a \(fileType.displayName) file holds audio only; record video to .mp4, .mov, .mkv, .webm or .ts"))
        }
        state.withLock {
            $0.session = session
            $0.cameras = cameras
        }
        for output in streamOutputs {
            session.addOutput(output)
            output.startStreaming(delegate: events)
        }
        // On a running session a stream refuses its settings at once: before any file is made.
        if let refusal = streamRefusal { throw refusal }
        if let fileOutput, let template, let destination = configuration.destination {
            // With a file per camera, each file's make and model are its own camera's (the output fills them in).
            fileOutput.settings.metadata = (template.hasCameraNumber ? [] : Self.deviceMetadata(inputs)) + configuration.settings.metadata
            session.addOutput(fileOutput)
            // A name with fields (door-%Y%m%d-%H%M%S.mp4) takes them from the time the file starts, also for a single file.
            if template.hasFields || configuration.segmentDuration != nil || configuration.segmentSize != nil || configuration.filePerEvent {
                fileOutput.startRecording(toTemplate: template, recordingDelegate: events)
            } else {
                fileOutput.startRecording(to: destination, recordingDelegate: events)
            }
            // A stop asked for while the recording was being set up (an interrupt) takes effect now.
            if state.withLock({ $0.stopped }) { fileOutput.stopRecording() }
        }
        if let error = state.withLock({ $0.fileEnd?.error }) { throw .recording(error) }
        guard !session.isRunning else { return }
        do {
            try session.startRunning()
        } catch {
            if let refusal = streamRefusal { throw refusal }
            if let error = state.withLock({ $0.fileEnd?.error }) { throw .recording(error) }
            throw .capture(error)
        }
    }

    /// A stream that refused its settings as it started, if one did.
    private var streamRefusal: CaptureRecorderError? {
        for (index, reason) in state.withLock({ $0.streamEnds }) {
            if case .failed(let error) = reason { return .streamRefused(index, error) }
        }
        return nil
    }

    /// The first camera's name and model, as the file's make and model.
    static func deviceMetadata(_ inputs: [CaptureInput]) -> [MetadataItem] {
        guard let primary = inputs.first(where: { $0.mediaType == .video }) ?? inputs.first else { return [] }
        return [.make(primary.source.localizedName), .model(primary.source.modelID ?? primary.source.localizedName)]
    }

    // MARK: Requests

    /// Pauses the file (streams go on).
    package func pause() { fileOutput?.pauseRecording() }
    package func resume() { fileOutput?.resumeRecording() }
    /// Finishes the current file at the next video frame and goes on in the next one the template names.
    package func switchToNextFile() { fileOutput?.switchToNextFile() }

    /// Marks the recording at its current media time (see
    /// `CaptureFileOutput.addMarker(title:)`); the files carry the markers
    /// as chapters. Throws `noFile` for a recorder that only streams.
    @discardableResult
    package func addMarker(title: String) throws(RecordingMarkerError) -> RecordingMarker {
        guard let fileOutput else { throw .noFile }
        return try fileOutput.addMarker(title: title)
    }

    /// Stops: the file is finished at the next video frame (the streams
    /// with it); without a file, the recording ends now and its streams
    /// stop in `finish()`.
    package func stop() {
        state.withLock { $0.stopped = true }
        if let fileOutput {
            fileOutput.stopRecording()
        } else {
            // The streams stop in `finish()`, after the session's encoders
            // have handed them what they still hold.
            endIfStreamsOver(force: true)
        }
    }

    // MARK: Progress and end

    /// The files the recording writes now (one per camera with `%c`).
    package var files: [String] {
        guard let fileOutput else { return [] }
        if template?.hasCameraNumber == true, !fileOutput.outputFilePaths.isEmpty { return fileOutput.outputFilePaths }
        return [fileOutput.outputFilePath ?? configuration.destination ?? ""]
    }

    package var progress: CaptureRecorderProgress {
        let statistics = totals
        let freeSpace = fileOutput.flatMap { CaptureFileOutput.freeSpace(near: $0.outputFilePath ?? configuration.destination ?? ".") }
        return CaptureRecorderProgress(statistics: statistics, freeSpace: freeSpace,
                                       streams: streamOutputs.map { ($0.destination, $0.statistics) })
    }

    /// Whether the recording has ended (by a stop, a limit, a failure or its inputs' end).
    package var hasEnded: Bool { state.withLock { $0.ended } }

    /// Waits until the recording ends, at most `timeout` seconds (nil: for
    /// as long as it takes); answers whether it has.
    @discardableResult
    package func waitUntilEnded(timeout seconds: Double? = nil) -> Bool {
        if hasEnded { return true }
        let result = seconds.map { endSignal.wait(timeout: .now() + $0) } ?? { endSignal.wait(); return .success }()
        if result == .success { endSignal.signal() }
        return result == .success
    }

    /// Waits for the files and streams to finish (stopping the recording
    /// first if it has not ended), takes the outputs off the session (which
    /// runs on for other recordings), and answers how the recording ended.
    @discardableResult
    package func finish() -> CaptureRecorderEnd {
        if !hasEnded {
            // Never started: nothing will end it but this.
            if state.withLock({ $0.session == nil }) { markEnded() }
            stop()
            waitUntilEnded()
        }
        fileOutput?.waitUntilFinished()
        for output in streamOutputs { output.stopStreaming() }
        for output in streamOutputs { output.waitUntilFinished() }
        let session = state.withLock { state in
            state.microphones = []
            return state.session
        }
        if let session {
            if let fileOutput { session.removeOutput(fileOutput) }
            for output in streamOutputs { session.removeOutput(output) }
        }
        let totals = self.totals
        return state.withLock { state in
            if let end = state.end { return end }
            let end = makeEnd(state, totals: totals)
            state.end = end
            return end
        }
    }

    /// The recording's totals: the file output's, or (streams alone) the media time streamed.
    /// Read before taking `state`'s lock, since the outputs take their own.
    private var totals: RecordingStatistics {
        var statistics = fileOutput?.statistics ?? RecordingStatistics()
        if fileOutput == nil { statistics.duration = streamOutputs.map(\.statistics.durationSent).max() ?? .zero }
        return statistics
    }

    func makeEnd(_ state: State, totals: RecordingStatistics) -> CaptureRecorderEnd {
        var end = CaptureRecorderEnd(reason: state.fileEnd?.reason ?? .stopped, error: state.fileEnd?.error, streamEnd: nil,
                                     requiredStreamFailure: state.requiredFailure, lostCameras: state.lostCameras,
                                     statistics: totals)
        guard fileOutput == nil else { return end }
        if state.requiredFailure != nil {
            end.reason = .error
            return end
        }
        let reasons = state.streamEnds.map(\.reason)
        for reason in reasons {
            switch reason {
            case .failed: end.reason = .error
            case .inputEnded(.deviceLost): end.reason = .deviceDisconnected
            case .inputEnded(.failed): end.reason = .error
            default: continue
            }
            end.streamEnd = reason
            return end
        }
        if reasons.contains(.maxDuration) {
            end.reason = .maxDuration
        } else if reasons.contains(.inputEnded(.endOfInput)) {
            end.reason = .endOfInput
        }
        return end
    }

    /// Marks the recording ended (once) and tells the delegate.
    func markEnded() {
        let (first, delegate) = state.withLock { state -> (Bool, (any CaptureRecorderDelegate)?) in
            defer { state.ended = true }
            return (!state.ended, state.delegate)
        }
        guard first else { return }
        stopWatchingForSilence()
        endSignal.signal()
        guard let delegate else { return }
        let totals = self.totals
        let end = state.withLock { makeEnd($0, totals: totals) }
        delegate.recorder(self, didEndWith: end)
    }

    /// Without a file: the recording ends once every stream has (or at once when stopped).
    func endIfStreamsOver(force: Bool) {
        guard fileOutput == nil else { return }
        let over = state.withLock { force || $0.stopped || $0.streamEnds.count == streamOutputs.count }
        if over { markEnded() }
    }
}
