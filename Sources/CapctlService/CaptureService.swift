import CapctlCommands
import CaptureKit
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `capctl serve`'s capture side: one running session of the devices it
/// opened, and the recordings, photos and settings requests ask for. The HTTP
/// layer only translates requests into these calls and their answers into
/// responses, as `record` translates options.
package final class CaptureService: Sendable {
    package let configuration: ServiceConfiguration
    package let events = ServiceEvents()
    package let folder: ServiceFolder
    let session = CaptureSession()
    let inputs: [CaptureInput]
    /// Takes photos while the session runs: one output for each camera, in the inputs' order.
    let photoOutputs: [(camera: CaptureInput, output: PhotoOutput)]
    /// The cameras' live views (`GET /stream.mjpg`, `/snapshot.jpg`), encoded only while watched.
    package let liveView = LiveViewOutput()
    /// The cameras' H.264 and microphones' Opus for WebRTC viewers, encoded only while watched.
    let encodedMedia = EncodedMediaOutput()
    /// What makes WebRTC peers; nil when WebRTC is off or cannot run (`webRTCUnavailableReason` says why).
    let webRTCPeering: (any WebRTCPeering)?
    let webRTCUnavailableReason: String?
    /// The WHEP viewers watching now.
    let webRTCViewers: WebRTCViewers
    /// Held while the service changes a camera's controls or torch: one
    /// request's settings are checked and applied together.
    let controlChanges = Mutex(())
    /// When the devices were opened, on the monotonic clock.
    let startedAt = MonotonicClock.nowNanoseconds()
    private let startedTime = EventTime.now()

    private struct Recordings {
        var next = 1
        var all: [ServiceRecording] = []
        var stopping = false
        var stopped = false
    }
    private let recordings = Mutex(Recordings())
    /// How many finished recordings GET /recordings still lists (the oldest go first).
    static let finishedRecordingsKept = 100

    /// Opens the devices and starts the session: a device that cannot be had
    /// is a command failure, before the service listens. `webRTC` makes the
    /// peers of WHEP viewers (a failure: why WebRTC is unavailable; nil: off).
    package init(configuration: ServiceConfiguration, webRTC: Result<any WebRTCPeering, WebRTCPeerError>? = nil) throws {
        self.configuration = configuration
        switch webRTC {
        case .success(let peering)?:
            webRTCPeering = peering
            webRTCUnavailableReason = nil
        case .failure(let error)?:
            webRTCPeering = nil
            webRTCUnavailableReason = error.message
        case nil:
            webRTCPeering = nil
            webRTCUnavailableReason = nil
        }
        let events = self.events
        webRTCViewers = WebRTCViewers { viewer, reason, last in
            events.publish(WebRTCViewerEvent(event: "viewer-left", time: EventTime.now(), id: viewer.id, camera: viewer.camera,
                                             microphone: viewer.microphone, reason: reason, bytesSent: last.bytesSent,
                                             packetsLost: last.packetsLost))
        }
        folder = ServiceFolder(root: configuration.folder)
        inputs = try configuration.openInputs()
        for input in inputs { session.addInput(input) }
        var photoOutputs: [(camera: CaptureInput, output: PhotoOutput)] = []
        for camera in inputs where camera.mediaType == .video {
            let output = PhotoOutput()
            session.addOutput(output)
            // A photo output takes the first camera whose connection is on: this one's alone.
            for connection in output.connections where connection.input !== camera { connection.isEnabled = false }
            // Fired through the session's capturing handle, which the camera's configuration lock lets through.
            output.flashDevice = camera.sessionPhotoFlash()
            photoOutputs.append((camera, output))
        }
        self.photoOutputs = photoOutputs
        liveView.maximumViewerCount = configuration.maxViewers
        session.addOutput(liveView)
        session.addOutput(encodedMedia)
        do throws(CaptureError) {
            try session.startRunning()
        } catch {
            for input in inputs { input.close() }
            throw CommandFailure(error)
        }
    }

    // MARK: Session and devices

    /// What `GET /session` answers.
    package struct SessionDocument: Encodable, Sendable {
        package var state: String
        package var started: String
        package var uptime: Double
        package var folder: String
        package var freeSpace: Int64?
        package var inputs: [InputDocument]
        package var views: [ViewDocument]
        /// WHEP viewers watching now.
        package var webrtc: [WebRTCViewerDocument]
        /// Whether WHEP is served (not with --no-webrtc; without GStreamer's WebRTC an offer answers 503).
        package var webrtcAvailable: Bool
        package var recordings: Int
        package var activeRecordings: Int
    }

    /// One of the session's inputs.
    package struct InputDocument: Encodable, Sendable {
        package var id: String
        package var device: String
        package var name: String
        package var mediaType: String
        package var format: String?
        package var width: Int?
        package var height: Int?
        package var frameRate: Double?
        package var sampleRate: Int?
        package var channels: Int?
        package var framesCaptured: Int?
        package var samplesCaptured: Int?
        package var dropped: Int
    }

    /// A live view being watched.
    package struct ViewDocument: Encodable, Sendable {
        package var camera: String
        package var width: Int
        package var height: Int
        package var fps: Double?
        package var quality: Int
        package var passesThrough: Bool
        package var viewers: Int
        package var framesMade: Int
        package var framesSkipped: Int
        package var framesSent: Int
        package var bytesSent: Int
        package var framesDropped: Int

        init(_ view: LiveViewStatistics) {
            camera = String(view.cameraIndex)
            width = view.width
            height = view.height
            fps = view.frameRate
            quality = view.quality
            passesThrough = view.passesThrough
            viewers = view.viewers
            framesMade = view.framesMade
            framesSkipped = view.framesSkipped
            framesSent = view.framesDelivered
            bytesSent = view.bytesDelivered
            framesDropped = view.framesDropped
        }
    }

    package var sessionDocument: SessionDocument {
        let all = recordings.withLock { $0.all }
        return SessionDocument(state: session.isRunning ? "running" : "stopped", started: startedTime,
                               uptime: Double(MonotonicClock.nowNanoseconds() - startedAt) / 1e9, folder: folder.root,
                               freeSpace: folder.freeSpace, inputs: inputDocuments, views: liveView.statistics.map(ViewDocument.init),
                               webrtc: webRTCViewerDocuments, webrtcAvailable: webRTCPeering != nil,
                               recordings: all.count,
                               activeRecordings: all.filter { !$0.hasEnded }.count)
    }

    package var inputDocuments: [InputDocument] {
        inputs.enumerated().map { index, input in
            let source = input.source
            if let video = source.videoFormat {
                return InputDocument(id: String(index), device: source.path, name: source.localizedName, mediaType: "video",
                                     format: video.fourcc, width: video.width, height: video.height,
                                     frameRate: video.frameDuration.map { $0.seconds > 0 ? 1 / $0.seconds : 0 },
                                     framesCaptured: input.capturedSampleCount, dropped: input.droppedSampleCount)
            }
            let audio = source.audioFormat
            return InputDocument(id: String(index), device: source.path, name: source.localizedName, mediaType: "audio",
                                 format: audio?.sampleFormat.rawValue, sampleRate: audio?.sampleRate, channels: audio?.channels,
                                 samplesCaptured: input.capturedSampleCount, dropped: input.droppedSampleCount)
        }
    }

    /// The session's input `id` (its place in the list, from 0).
    func input(_ id: String) throws(ServiceError) -> CaptureInput {
        guard let index = Int(id), inputs.indices.contains(index) else {
            throw ServiceError(.notFound, "no device '\(id)'; GET /devices lists them, numbered from 0")
        }
        return inputs[index]
    }

    // MARK: Recordings

    /// What `POST /recordings` answers.
    package struct RecordingCreated: Encodable, Sendable {
        package var id: String
        /// The first file, by its name inside the service's folder (absent for streams alone).
        package var file: String?
        package var files: [String]
        /// When the request arrived (UTC, as events' `time`): a file's `start` (its segment event) is
        /// when its first sample was captured, so the two give how long a recording took to begin.
        package var requested: String
    }

    /// Starts a recording with `record`'s settings (see `StartRecordingRequest`).
    package func startRecording(_ request: StartRecordingRequest) throws(ServiceError) -> RecordingCreated {
        let requested = EventTime.now()
        var options = request.options
        if let name = options.out { options.out = try folder.path(forTemplate: name) }
        let id = try recordings.withLock { state throws(ServiceError) -> String in
            guard !state.stopping else { throw ServiceError(.unavailable, "the service is stopping") }
            let active = state.all.filter { !$0.hasEnded }.count
            guard active < configuration.maxRecordings else {
                throw ServiceError(.tooMany, "\(active) recordings are running, the most this service takes (--max-recordings); stop one first")
            }
            defer { state.next += 1 }
            return "rec-\(state.next)"
        }
        let recording = try ServiceRecording(id: id, options: options, folder: folder, events: events)
        let interval = max(0.05, options.progressInterval.time.seconds)
        // Listed before it starts, so that its first events name a recording GET /recordings knows.
        recordings.withLock { state in
            state.all.append(recording)
            // A service that runs for months keeps the latest finished recordings, not all of them.
            let finished = state.all.filter(\.hasEnded)
            if finished.count > Self.finishedRecordingsKept {
                let dropped = Set(finished.prefix(finished.count - Self.finishedRecordingsKept).map(ObjectIdentifier.init))
                state.all.removeAll { dropped.contains(ObjectIdentifier($0)) }
            }
        }
        do {
            try recording.start(on: session, interval: interval)
        } catch {
            recordings.withLock { $0.all.removeAll { $0 === recording } }
            throw error
        }
        let files = recording.recorder.files.map(folder.name)
        return RecordingCreated(id: id, file: files.first, files: files, requested: requested)
    }

    /// Every recording the service has made, running or finished, oldest first.
    package func recordingList() -> RecordingListDocument {
        RecordingListDocument(recordings: recordings.withLock { $0.all }.map(\.document))
    }

    /// One recording: its state, files and progress (as the `progress` event), and its `finished` event once it has ended.
    package func recordingStatus(_ id: String) throws(ServiceError) -> RecordingDocument {
        try recording(id).document
    }

    /// The recordings GET /recordings lists, oldest first.
    var listedRecordings: [ServiceRecording] { recordings.withLock { $0.all } }

    func recording(_ id: String) throws(ServiceError) -> ServiceRecording {
        guard let recording = recordings.withLock({ $0.all.first { $0.id == id } }) else {
            throw ServiceError(.notFound, "no recording '\(id)'; GET /recordings lists them")
        }
        return recording
    }

    /// A request on a recording that is still running.
    package enum RecordingRequest: String, Sendable {
        case pause, resume, `switch`, stop
    }

    /// Pauses, resumes, switches or stops a recording; answers its state after the request.
    package func request(_ request: RecordingRequest, recording id: String) throws(ServiceError) -> RecordingDocument {
        let recording = try recording(id)
        if recording.hasEnded || recording.recorder.hasEnded {
            throw ServiceError(.conflict, "recording \(id) has finished")
        }
        let recorder = recording.recorder
        if request != .stop && recorder.fileOutput == nil {
            throw ServiceError(.conflict, "recording \(id) streams without a file: it can only be stopped")
        }
        switch request {
        case .pause: recorder.pause()
        case .resume: recorder.resume()
        case .switch: recorder.switchToNextFile()
        case .stop:
            recorder.stop()
            recording.finish()
        }
        return recording.document
    }

    /// The files running recordings write now, by name inside the folder.
    func filesBeingWritten() -> [String] {
        recordings.withLock { $0.all }.filter { !$0.recorder.hasEnded }.flatMap { $0.recorder.files.map(folder.name) }
    }

    /// Puts a marker in a running recording (`{"title": …}`); answers its `marker` event.
    package func addMarker(_ marker: MarkerRequest, recording id: String) throws(ServiceError) -> RecordingReporter.MarkerEvent {
        let title = marker.title
        let recording = try recording(id)
        if recording.hasEnded || recording.recorder.hasEnded { throw ServiceError(.conflict, "recording \(id) has finished") }
        return try recording.addMarker(title: title)
    }

    // MARK: Stopping

    /// Finishes every recording (as `record` does on SIGINT), stops the
    /// session and closes the devices; ends the event streams.
    package func shutdown() {
        let all = recordings.withLock { state -> [ServiceRecording]? in
            guard !state.stopping else { return nil }
            state.stopping = true
            return state.all
        }
        guard let all else { return }
        for recording in all { recording.recorder.stop() }
        for recording in all { recording.finish() }
        webRTCViewers.close()
        session.stopRunning()
        for input in inputs { input.close() }
        events.close()
    }
}
