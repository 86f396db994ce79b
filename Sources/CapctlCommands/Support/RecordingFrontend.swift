import CaptureKit
import Dispatch
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What `record` was asked to do, parsed and checked: the devices, and
/// the recording as CaptureKit's configuration.
package struct RecordRequest {
    /// The cameras, in the order given (camera 1 first), each with what it is asked for.
    var cameras: [CaptureInputs.Camera]
    var audio: [String]
    var audioRequest: CaptureAudioRequest
    var realtime: Bool
    var holdsConfigurationLock: Bool
    package var recording: CaptureRecorderConfiguration
    var progress: ProgressStyle
    var progressInterval: MediaTime

    /// The request `options` make; they were validated.
    package init(options: RecordingOptions) {
        let shared = options.videoRequest
        cameras = options.video.map { ($0.device.specifier, $0.request(over: shared), options.overlay(of: $0)) }
        audio = options.audio.map(\.specifier)
        if cameras.isEmpty && audio.isEmpty {
            if options.out.flatMap({ FileType(path: $0)?.availableMediaTypes }) == [.audio] {
                audio = ["default"]
            } else {
                cameras = [("video:0", shared, options.sharedOverlay)]
            }
        }
        audioRequest = options.audioRequest
        realtime = !options.noRealtime
        holdsConfigurationLock = !options.noLock
        progress = options.json ? .json : (options.progress ?? (isatty(STDOUT_FILENO) == 1 ? .text : .json))
        progressInterval = options.progressInterval.time
        recording = options.recorderConfiguration
    }

    package var limits: RecordingReporter.Limits {
        RecordingReporter.Limits(duration: recording.maxDuration, size: recording.maxSize, minFreeSpace: recording.minFreeSpace)
    }
}

/// Runs `record`: hands the request to CaptureKit's `CaptureRecorder` on a
/// session of the named devices, turns signals into its requests, its
/// events into report lines, and its end into an exit status.
final class RecordingFrontend: Sendable {
    let request: RecordRequest
    private let reporter: RecordingReporter
    private let relay: RecordingEventRelay
    private let interrupts = Atomic<Int>(0)

    init(request: RecordRequest) {
        self.request = request
        reporter = RecordingReporter(style: request.progress, showsPreRoll: request.recording.preRoll != nil,
                                     showsLevelMeters: request.progress == .text && isatty(STDOUT_FILENO) == 1,
                                     showsDeletions: request.recording.retention.isActive)
        relay = RecordingEventRelay(reporter: reporter)
    }

    func run() throws -> ExitStatus {
        let recorder: CaptureRecorder
        do throws(RecordingError) {
            recorder = try CaptureRecorder(request.recording, delegate: relay)
            // Before any device opens: a file in the way or a missing folder costs no camera start.
            try recorder.checkDestination(cameras: request.cameras.count)
        } catch {
            throw CommandFailure(error)
        }
        let inputs = try openInputs()
        let signals = try SignalEvents([SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2]) { [weak self, weak recorder] signal in
            guard let self, let recorder else { return }
            switch signal {
            case SIGINT, SIGTERM:
                if self.interrupts.add(1, ordering: .relaxed).newValue > 1 && signal == SIGINT {
                    // Second interrupt: leave now. Fragments already written stay readable.
                    self.reporter.interruptedAgain()
                    _exit(130)
                }
                recorder.stop()
            case SIGHUP: recorder.switchToNextFile()
            case SIGUSR1: recorder.pause()
            case SIGUSR2: recorder.resume()
            default: break
            }
        }
        _ = signals

        let session = CaptureSession()
        for input in inputs { session.addInput(input) }
        do throws(CaptureRecorderError) { try recorder.start(on: session) } catch { throw CommandFailure(error) }
        reporter.started(files: recorder.files, inputs: inputs, limits: request.limits,
                         streams: recorder.streamOutputs.map(\.destination.description))

        // Progress until the recording ends by itself or on request.
        let interval = max(0.05, request.progressInterval.seconds)
        while !recorder.waitUntilEnded(timeout: interval) {
            let progress = recorder.progress
            reporter.progress(progress.statistics, limits: request.limits, freeSpace: progress.freeSpace,
                              streams: reporter.streamStatuses(progress.streams), audioLevels: recorder.readAudioLevels())
        }
        // The recorder finishes while the cameras still run: a stream sends
        // the frames its encoder still held from before the end.
        let end = recorder.finish()
        session.stopRunning()
        return RecordingOutcome.report(end, to: reporter, streams: reporter.streamStatuses(recorder.progress.streams),
                                       hasFile: recorder.fileOutput != nil)
    }

    /// The devices, as the command line names them, with what each is asked for.
    private func openInputs() throws -> [CaptureInput] {
        try CaptureInputs.open(cameras: request.cameras, microphones: request.audio, audioRequest: request.audioRequest,
                               realtime: request.realtime, locksConfiguration: request.holdsConfigurationLock)
    }
}

/// How a recording ended, as `record` reports it: the finished event and the exit status.
package enum RecordingOutcome {
    /// Reports the end and answers the exit status.
    package static func report(_ end: CaptureRecorderEnd, to reporter: RecordingReporter, streams: [RecordingReporter.StreamStatus], hasFile: Bool) -> ExitStatus {
        var (reason, error) = (end.reason, end.error)
        var failure = end.streamEnd.flatMap(Self.text)
        var status = exitStatus(reason: reason, error: error)
        if let required = end.requiredStreamFailure {
            // The file is complete; the stream it was asked to feed is not.
            failure = "stream \(required.index) \(required.destination): \(required.error.description) (--stream-required)"
            reason = .error
            error = nil
            status = .unavailable
        } else if !hasFile, reason == .error {
            status = .unavailable
        } else if !hasFile, reason == .deviceDisconnected {
            failure = nil
        }
        // A camera lost while the others recorded on: the files are
        // complete, and the status says that a device went away.
        if !end.lostCameras.isEmpty, status == .success { status = .unavailable }
        if hasFile, status == .success, end.statistics.fileCount == 0 {
            // Stopped before any media reached a file (or paused from start to end): no error, and no file.
            Diagnostics.warning("nothing was captured before the recording stopped; no file was made")
        }
        reporter.finished(end.statistics, reason: reason, error: error, status: status, streams: streams, failure: failure,
                          lostCameras: end.lostCameras)
        return status
    }

    /// What a stream's end says, when it ended a recording without a file.
    private static func text(_ end: LiveStreamEndReason) -> String? {
        switch end {
        case .failed(let error): return error.description
        case .inputEnded(.deviceLost(let text)): return text
        case .inputEnded(.failed(let error)): return error.description
        default: return nil
        }
    }

    private static func exitStatus(reason: RecordingStopReason, error: RecordingError?) -> ExitStatus {
        switch reason {
        case .stopped, .maxDuration, .maxSize, .minFreeSpace, .endOfInput: return .success
        case .deviceDisconnected: return .unavailable
        case .error:
            guard let error else { return .failure }
            return CommandFailure(error).status
        }
    }
}

/// Turns a `CaptureRecorder`'s delegate calls into the reporter's events.
package final class RecordingEventRelay: CaptureRecorderDelegate, Sendable {
    let reporter: RecordingReporter

    package init(reporter: RecordingReporter) {
        self.reporter = reporter
    }

    package func recorder(_ recorder: CaptureRecorder, didPauseRecordingTo path: String, cause: RecordingPauseCause) {
        reporter.paused(path: path, statistics: recorder.progress.statistics, cause: PauseCause(cause))
    }

    package func recorder(_ recorder: CaptureRecorder, didResumeRecordingTo path: String, cause: RecordingPauseCause) {
        reporter.resumed(path: path, statistics: recorder.progress.statistics, cause: PauseCause(cause))
    }

    package func recorder(_ recorder: CaptureRecorder, didSeeMotion started: Bool, score: Double) {
        reporter.motion(started: started, score: score)
    }

    package func recorder(_ recorder: CaptureRecorder, microphone number: Int, input: CaptureInput, silence event: AudioSilenceMonitor.Event) {
        reporter.silence(event, microphone: number, input: input, threshold: recorder.configuration.silence?.threshold)
    }

    package func recorder(_ recorder: CaptureRecorder, didLoseCamera number: Int, input: CaptureInput) {
        reporter.cameraLost(input, camera: number, statistics: recorder.progress.statistics)
    }

    package func recorder(_ recorder: CaptureRecorder, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
        // No file was made: the recording's end says why, and no event claims one was written.
        guard file.wasCreated else { return }
        // A limit or a lost camera ended the recording with this file, which is complete: the end event says which.
        reporter.segment(file, error: error?.recordingSuccessfullyFinished == true ? nil : error)
    }

    package func recorder(_ recorder: CaptureRecorder, didDeleteFile path: String, bytes: Int64, reason: RecordingFileDeletionReason) {
        reporter.fileDeleted(path, bytes: bytes, reason: reason.word)
    }

    package func recorder(_ recorder: CaptureRecorder, streamDidConnect index: Int, destination: StreamDestination, connections: Int) {
        reporter.streamConnected(index, url: destination.description, connections: connections)
    }

    package func recorder(_ recorder: CaptureRecorder, streamDidDisconnect index: Int, destination: StreamDestination, error: WriterError) {
        reporter.streamDisconnected(index, url: destination.description, error: error)
    }

    package func recorder(_ recorder: CaptureRecorder, streamWillReconnect index: Int, destination: StreamDestination, after delay: MediaTime,
                  attempt: Int) {
        reporter.streamReconnecting(index, url: destination.description, after: delay, attempt: attempt)
    }
}
