import CapctlCommands
import CaptureKit
import FoundationEssentials
import Synchronization

/// One recording of the service: a `CaptureRecorder` on the service's
/// session, its events (tagged with its id) and its progress reports,
/// made exactly as `record` makes them.
final class ServiceRecording: Sendable {
    let id: String
    let recorder: CaptureRecorder
    let reporter: RecordingReporter
    private let relay: RecordingEventRelay
    private let limits: RecordingReporter.Limits
    private let folder: ServiceFolder
    /// The end, once the recording has finished: its exit status as `record`
    /// would give it, and the totals and reason its `finished` event gives.
    private let ended = Mutex<End?>(nil)
    /// Held while the end is awaited and reported.
    private let finishing = Mutex(())
    private struct End {
        var status: ExitStatus
        var statistics: RecordingStatistics
        var reason: String
    }
    private let markers = Mutex<[RecordingReporter.MarkerEvent]>([])

    init(id: String, options: RecordingOptions, folder: ServiceFolder, events: ServiceEvents) throws(ServiceError) {
        self.id = id
        self.folder = folder
        var request = RecordRequest(options: options)
        request.recording.overwritesExistingFiles = false
        request.recording.settings.realTime = true
        limits = request.limits
        reporter = RecordingReporter(style: .json, showsPreRoll: request.recording.preRoll != nil,
                                     showsDeletions: request.recording.retention.isActive,
                                     sink: EventSink(recording: id, events: events), fileName: { folder.name($0) })
        relay = RecordingEventRelay(reporter: reporter)
        do throws(RecordingError) {
            recorder = try CaptureRecorder(request.recording, delegate: relay)
        } catch {
            throw ServiceError(.badRequest, error.description)
        }
    }

    /// Starts the recording on the service's running session, and reports
    /// its progress every `interval` on a thread of its own until it ends.
    func start(on session: CaptureSession, interval: Double) throws(ServiceError) {
        let cameras = session.inputs.filter { $0.mediaType == .video }.count
        if recorder.configuration.silence != nil, !session.inputs.contains(where: { $0.mediaType == .audio }) {
            throw ServiceError(.badRequest, "silenceTimeout listens to microphones, and the service has none: start capctl serve with --audio DEVICE")
        }
        do throws(RecordingError) {
            try recorder.checkDestination(cameras: cameras)
        } catch {
            if case .outputExists = error { throw ServiceError(.conflict, error.description + "; the service never overwrites a file") }
            throw ServiceError(.badRequest, error.description)
        }
        do throws(CaptureRecorderError) {
            try recorder.start(on: session)
        } catch {
            let failure = CommandFailure(error)
            throw ServiceError(failure.status == .unavailable ? .unavailable : .badRequest, failure.message)
        }
        reporter.started(files: recorder.files, inputs: session.inputs, limits: limits,
                         streams: recorder.streamOutputs.map(\.destination.description))
        do {
            _ = try SystemThread(name: "capctl-rec-\(id)") { [self] in
                while !recorder.waitUntilEnded(timeout: interval) {
                    let progress = recorder.progress
                    reporter.progress(progress.statistics, limits: limits, freeSpace: progress.freeSpace,
                                      streams: reporter.streamStatuses(progress.streams), audioLevels: recorder.readAudioLevels())
                }
                finish()
            }
        } catch {
            // No thread for its reports: the recording cannot be watched, so it ends now.
            finish()
            throw ServiceError(.failed, "cannot start the recording's thread: \(error.description)")
        }
    }

    /// Waits for the recording's files and streams, and reports its end (once).
    /// Its reporting thread and a stop request (or the service's shutdown) both
    /// call this: one at a time, so that the second answers the end the first
    /// reported, once the files and streams are over.
    @discardableResult
    func finish() -> ExitStatus {
        finishing.withLock { _ in
            if let ended = ended.withLock({ $0 }) { return ended.status }
            let end = recorder.finish()
            let result = RecordingOutcome.report(end, to: reporter, streams: reporter.streamStatuses(recorder.progress.streams),
                                                 hasFile: recorder.fileOutput != nil)
            ended.withLock {
                $0 = End(status: result, statistics: end.statistics, reason: reporter.finishedEvent?.reason ?? end.reason.rawValue)
            }
            Self.returnFreedMemory()
            return result
        }
    }

    /// Gives the memory the recording's encoders, queues and threads freed
    /// back to the system, once it has ended. Its large buffers, freed in the
    /// middle of the allocator's heaps, would otherwise stay resident: a
    /// service making a recording, a photo and a live view every 7 s grew from
    /// 46 MiB to 110-116 MiB in 8 minutes; malloc_stats showed 62 MiB in its 16
    /// arenas of which 8.5 MiB were in use, and one trim in the running service
    /// took it from 114 to 79 MiB. Fewer arenas (M_ARENA_MAX 2) did not help
    /// (121 MiB at 6.5 minutes): the memory is free, not lost, only held.
    /// Trimmed after every recording, the same rounds stayed within 71-97 MiB
    /// over 40 minutes, while the service untrimmed beside it held 138-156 MiB
    /// (`scripts/bench soak`). It runs once per recording, never per frame.
    static func returnFreedMemory() {
        Allocator.returnFreedMemory()
    }

    var hasEnded: Bool { ended.withLock { $0 != nil } }

    var document: RecordingDocument {
        let progress = recorder.progress
        let event = reporter.currentProgress(progress.statistics, limits: limits, freeSpace: progress.freeSpace,
                                             streams: reporter.streamStatuses(progress.streams), audioLevels: recorder.currentAudioLevels)
        let finished = reporter.finishedEvent
        let state = finished != nil ? "finished" : progress.statistics.isPaused ? "paused" : "running"
        let files = finished?.files ?? (progress.statistics.files + (recorder.hasEnded ? [] : recorder.files)).map(folder.name)
        return RecordingDocument(id: id, state: state, files: files, progress: event, finished: finished, markers: markers.withLock { $0 })
    }

    /// The recording's numbers now, as values (for the service's metrics).
    struct Measurement {
        enum State: String, CaseIterable {
            case running, paused, finished
        }
        var state: State
        /// The totals so far; once finished, those of its `finished` event.
        var statistics: RecordingStatistics
        /// Its `finished` event's reason, once finished.
        var endReason: String?
        var streams: [(destination: StreamDestination, statistics: LiveStreamStatistics)]
    }

    var measurement: Measurement {
        if let end = ended.withLock({ $0 }) {
            return Measurement(state: .finished, statistics: end.statistics, endReason: end.reason,
                               streams: recorder.streamOutputs.map { ($0.destination, $0.statistics) })
        }
        let progress = recorder.progress
        return Measurement(state: progress.statistics.isPaused ? .paused : .running, statistics: progress.statistics, endReason: nil,
                           streams: progress.streams)
    }

    /// Puts a marker at the recording's current media time: a chapter of the file it lands in.
    func addMarker(title: String) throws(ServiceError) -> RecordingReporter.MarkerEvent {
        do throws(RecordingMarkerError) {
            let marker = try recorder.addMarker(title: title)
            let event = reporter.marker(marker)
            markers.withLock { $0.append(event) }
            return event
        } catch {
            switch error {
            case .notRecording, .noFile: throw ServiceError(.conflict, "recording \(id): \(error.description)")
            default: throw ServiceError(.badRequest, error.description)
            }
        }
    }
}

extension ServiceFolder {
    /// A path's name inside the folder (the path itself when outside it).
    func name(_ path: String) -> String {
        path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }
}

/// What the service answers about a recording (`GET /recordings/ID`, and its requests).
package struct RecordingDocument: Encodable, Sendable {
    package var id: String
    /// running, paused or finished.
    package var state: String
    /// Its files so far, by name inside the service's folder.
    package var files: [String]
    package var progress: RecordingReporter.ProgressEvent
    /// Its `finished` event, once it has ended.
    package var finished: RecordingReporter.FinishedEvent?
    /// The markers put in it, oldest first, as their `marker` events.
    package var markers: [RecordingReporter.MarkerEvent]
}
