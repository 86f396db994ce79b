import CaptureKit
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What `record` was asked to do, parsed and checked.
struct RecordRequest {
    /// The cameras, in the order given (camera 1 first), each with what it is asked for.
    var cameras: [(specifier: String, request: CaptureVideoRequest)]
    var audio: [String]
    var videoRequest: CaptureVideoRequest
    var audioRequest: CaptureAudioRequest
    var realtime: Bool
    var settings: RecordingSettings
    var maxDuration: MediaTime?
    var maxSize: Int64?
    var minFreeSpace: Int64
    var segmentDuration: MediaTime?
    var segmentSize: Int64?
    var overwrite: Bool
    /// The file (or template) to record to; nil when only streaming.
    var output: String?
    var streams: StreamRequest?
    var progress: ProgressStyle
    var progressInterval: MediaTime
    var extraMetadata: [MetadataItem]
    var holdsConfigurationLock: Bool
    var triggers: TriggerOptions
    var stopsOnDeviceLoss: Bool

    init(command: Capctl.Record) {
        videoRequest = command.capture.request
        let shared = videoRequest
        cameras = command.video.map { ($0.device.specifier, $0.request(over: shared)) }
        audio = command.audio.map(\.specifier)
        if cameras.isEmpty && audio.isEmpty {
            if command.out.flatMap({ FileType(path: $0)?.availableMediaTypes }) == [.audio] {
                audio = ["default"]
            } else {
                cameras = [("video:0", shared)]
            }
        }
        stopsOnDeviceLoss = command.stopOnDeviceLoss
        audioRequest = CaptureAudioRequest(sampleRate: command.sampleRate, channels: command.channels)
        realtime = !command.capture.noRealtime
        settings = command.encoding.settings()
        settings.audioTracksAreAlternates = command.audioAlternates
        settings.realTime = realtime
        maxDuration = command.maxDuration?.time
        maxSize = command.maxSize?.bytes
        minFreeSpace = command.minFreeSpace.bytes
        segmentDuration = command.segmentDuration?.time
        segmentSize = command.segmentSize?.bytes
        overwrite = command.overwrite
        output = command.out
        if !command.streaming.stream.isEmpty {
            // validate() checked the URLs and looked their hosts up.
            streams = StreamRequest(destinations: (try? command.streaming.destinations()) ?? [], options: command.streaming,
                                    fileType: command.out.flatMap { FileType(path: $0) }, withoutFile: command.out == nil)
        }
        progress = command.json ? .json : (command.progress ?? (isatty(STDOUT_FILENO) == 1 ? .text : .json))
        progressInterval = command.progressInterval.time
        holdsConfigurationLock = !command.noLock
        triggers = command.trigger
        extraMetadata = command.metadata.map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return MetadataItem(key: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : "")
        }
    }
}

/// Runs a recording: opens the devices, records through a capture session
/// and a file output, turns signals into requests, reports progress, and
/// answers the exit status. Everything device- and file-facing is CaptureKit's.
final class RecordingFrontend: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: its mutable state (end reason, error, interrupt count) is guarded by `lock`; the rest is set before the session starts.
    let request: RecordRequest
    private let reporter: RecordingReporter
    private let done = DispatchSemaphore(value: 0)
    private let lock = Lock()
    private var endReason: RecordingStopReason = .stopped
    private var endError: RecordingError?
    private var interrupts = 0
    private var triggers: RecordingTriggers?
    /// The camera inputs, in the order given, for the numbers events give them.
    private var cameraInputs: [CaptureInput] = []
    /// The cameras lost while the others recorded on (numbered from 1).
    private var lostCameras: [Int] = []

    init(request: RecordRequest) {
        self.request = request
        reporter = RecordingReporter(style: request.progress)
    }

    func run() throws -> ExitStatus {
        var template: FileNameTemplate?
        if let path = request.output {
            do { template = try FileNameTemplate(path) } catch { throw CommandFailure(error.description, status: .usage) }
            try checkOutputs(template!)
        }

        // Devices: resolved before any file exists; the session opens them.
        let discovery = DeviceDiscovery()
        var inputs: [CaptureInput] = []
        do throws(CaptureError) {
            for camera in request.cameras {
                inputs.append(CaptureInput(source: try CaptureSourceFactory.videoSource(camera.specifier, request: camera.request,
                                                                                         realtime: request.realtime, discovery: discovery)))
            }
            for audio in request.audio {
                inputs.append(CaptureInput(source: try CaptureSourceFactory.audioSource(audio, request: request.audioRequest,
                                                                                         realtime: request.realtime, discovery: discovery)))
            }
            // The configuration lock, as AVCaptureDevice's lockForConfiguration:
            // taken by the session while it runs, unless --no-lock.
            for input in inputs { input.locksConfiguration = request.holdsConfigurationLock }
            let cameras = inputs.filter { $0.mediaType == .video }
            lock.withLock { cameraInputs = cameras }
        } catch {
            throw CommandFailure(error)
        }
        // A camera streams to one reader: the same one twice would only fail later, less clearly.
        let nodes = inputs.compactMap { $0.source as? V4L2CaptureSource }
        if let twice = nodes.first(where: { node in nodes.filter { $0.uniqueID == node.uniqueID }.count > 1 }) {
            throw CommandFailure("--video names \(twice.path) (\(twice.uniqueID)) twice; give each camera once", status: .usage)
        }

        var output: CaptureFileOutput?
        if let path = request.output, let template {
            output = try makeFileOutput(path: path, template: template, inputs: inputs)
        }
        let triggers = lock.withLock { self.triggers }
        let streams = request.streams.map { streamRequest in
            RecordingStreams(streamRequest, fileSettings: request.settings, maxDuration: request.maxDuration, reporter: reporter) { [weak self, weak output] in
                guard let self else { return }
                if let output { output.stopRecording() } else { self.done.signal() }
            }
        }

        let signals = try SignalEvents([SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2]) { [weak self, weak output] signal in
            guard let self else { return }
            switch signal {
            case SIGINT, SIGTERM:
                let count = self.lock.withLock { () -> Int in self.interrupts += 1; return self.interrupts }
                if count > 1 && signal == SIGINT {
                    // Second interrupt: leave now. Fragments already written stay readable.
                    self.reporter.interruptedAgain()
                    _exit(130)
                }
                if let output { output.stopRecording() } else { self.done.signal() }
            case SIGHUP: output?.switchToNextFile()
            case SIGUSR1: triggers?.pause(.signal)
            case SIGUSR2: triggers?.resume(.signal)
            default: break
            }
        }
        _ = signals

        // The session opens the devices and settles their formats; the
        // recording asked for above begins with it (its first file is created
        // then, so that nothing captured is missed), or fails it.
        let session = CaptureSession()
        for input in inputs { session.addInput(input) }
        // Streams first: settings a stream cannot take stop the start before the file is created.
        streams?.start(on: session)
        // With a motion detector, the file output joins once the camera is
        // known to send pictures it can read (see `checkMotionInput`).
        if let detector = triggers?.detector { session.addOutput(detector.output) } else if let output { session.addOutput(output) }
        do {
            try session.startRunning()
        } catch {
            if let refused = streams?.refusal { throw CommandFailure(refused, status: .usage) }
            if let refused = lock.withLock({ endError }) { throw CommandFailure(refused) }
            throw CommandFailure(error)
        }
        if triggers?.detector != nil, let output {
            try checkMotionInput(inputs: inputs, session: session)
            session.addOutput(output)
            if let refused = lock.withLock({ endError }) {
                session.stopRunning()
                throw CommandFailure(refused)
            }
        }
        var files = output.map { [$0.outputFilePath ?? request.output ?? ""] } ?? []
        if let output, template?.hasCameraNumber == true, !output.outputFilePaths.isEmpty { files = output.outputFilePaths }
        reporter.started(files: files, inputs: inputs, limits: limits, streams: streams?.urls ?? [])

        // Progress until the recording ends by itself or on request.
        let interval = max(0.05, request.progressInterval.seconds)
        while done.wait(timeout: .now() + interval) == .timedOut {
            let statistics = output?.statistics ?? streams?.capturedStatistics ?? RecordingStatistics()
            let freeSpace = output.flatMap { CaptureFileOutput.freeSpace(near: $0.outputFilePath ?? request.output ?? ".") }
            reporter.progress(statistics, limits: limits, freeSpace: freeSpace, streams: streams?.statuses() ?? [])
        }
        session.stopRunning()
        output?.waitUntilFinished()
        streams?.stop()
        streams?.waitUntilFinished()

        var (reason, error) = lock.withLock { (endReason, endError) }
        var failure: String?
        if output == nil, let streams { (reason, failure) = streams.endReason }
        let statistics = output?.statistics ?? RecordingStatistics()
        var status = exitStatus(reason: reason, error: error)
        if let required = streams?.requiredFailure {
            // The file is complete; the stream it was asked to feed is not.
            failure = required
            reason = .error
            error = nil
            status = .unavailable
        } else if output == nil, reason == .error {
            status = .unavailable
        } else if output == nil, reason == .deviceDisconnected {
            failure = nil
        }
        // A camera lost while the others recorded on: the files are
        // complete, and the status says that a device went away.
        let lost = lock.withLock { lostCameras }
        if !lost.isEmpty, status == .success { status = .unavailable }
        reporter.finished(statistics, reason: reason, error: error, status: status, streams: streams?.statuses() ?? [], failure: failure,
                          lostCameras: lost)
        return status
    }

    /// The movie or audio file output for `path`, with the limits and
    /// segments asked for, its recording asked to begin with the session.
    private func makeFileOutput(path: String, template: FileNameTemplate, inputs: [CaptureInput]) throws -> CaptureFileOutput {
        let fileType = FileType(path: path)
        let output: CaptureFileOutput = fileType?.availableMediaTypes.contains(.video) == false ? AudioFileOutput() : MovieFileOutput()
        if output is AudioFileOutput, !request.cameras.isEmpty {
            throw CommandFailure("\(path): a \(fileType?.displayName ?? "") file holds audio only; record video to .mp4, .mov, .mkv, .webm or .ts", status: .usage)
        }
        var settings = request.settings
        // With a file per camera, each file's make and model are its own camera's (the library fills them in).
        settings.metadata = (template.hasCameraNumber ? [] : defaultMetadata(inputs)) + request.extraMetadata
        output.settings = settings
        output.maxRecordingDuration = request.maxDuration ?? .invalid
        output.maxRecordingSize = request.maxSize ?? 0
        output.minFreeDiskSpaceLimit = request.minFreeSpace
        output.segmentDuration = request.segmentDuration ?? .invalid
        output.segmentFileSize = request.segmentSize ?? 0
        output.overwritesExistingFiles = request.overwrite
        output.stopsOnDeviceLoss = request.stopsOnDeviceLoss
        request.triggers.configure(output)
        reporter.showsPreRoll = request.triggers.preRoll != nil
        let triggers = RecordingTriggers(options: request.triggers, output: output, reporter: reporter)
        lock.withLock { self.triggers = triggers }
        if triggers.detector != nil && request.cameras.isEmpty {
            throw CommandFailure("--resume-on motion watches a camera's picture; add --video DEVICE", status: .usage)
        }
        // Each file from the template: also an OUT named by time fields alone, one file per event.
        if template.hasCounter || template.hasCameraNumber || request.segmentDuration != nil || request.segmentSize != nil || request.triggers.filePerEvent {
            output.startRecording(toTemplate: template, recordingDelegate: self)
        } else {
            output.startRecording(to: path, recordingDelegate: self)
        }
        // Asked before the first sample: nothing is written until a resume.
        if request.triggers.startPaused { triggers.pause(.start) }
        return output
    }

    /// The motion detector reads a picture's luma from raw frames: a camera
    /// that sends compressed ones, or raw ones without an 8-bit luma
    /// (settled once the session runs), is refused before anything is recorded.
    private func checkMotionInput(inputs: [CaptureInput], session: CaptureSession) throws {
        guard let camera = inputs.first(where: { $0.mediaType == .video }), let layout = camera.source.videoFormat?.layout,
              !MotionDetector.canAnalyze(layout) else { return }
        session.stopRunning()
        let sends: String
        switch layout {
        case .compressed(let codec): sends = codec
        case .raw(let format, _): sends = "\(format.name) pictures"
        }
        throw CommandFailure("\(camera.source.path): --resume-on motion reads 8-bit luma from raw pictures and this camera sends \(sends); choose a --pixel-format such as YUYV",
                             status: .usage)
    }

    private var limits: RecordingReporter.Limits {
        RecordingReporter.Limits(duration: request.maxDuration, size: request.maxSize, minFreeSpace: request.minFreeSpace)
    }

    /// Fails before opening any device when an output exists or its directory is missing.
    private func checkOutputs(_ template: FileNameTemplate) throws {
        let cameras = template.hasCameraNumber ? max(1, request.cameras.count) : 1
        for camera in 1...cameras { try checkOutput(template.path(number: 1, camera: camera)) }
    }

    private func checkOutput(_ first: String) throws {
        var info = stat()
        if lstat(first, &info) == 0 && !request.overwrite {
            throw CommandFailure("\(first): already exists; capctl never overwrites a file (use --overwrite to replace it)", status: .cannotCreate)
        }
        if lstat(first, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
            throw CommandFailure("\(first): is a directory", status: .cannotCreate)
        }
        let directory = first.contains("/") ? String(first[..<first.lastIndex(of: "/")!]) : "."
        let target = directory.isEmpty ? "/" : directory
        if stat(target, &info) != 0 || (info.st_mode & S_IFMT) != S_IFDIR {
            throw CommandFailure("\(first): the directory \(target) does not exist", status: .cannotCreate)
        }
        if access(target, W_OK) != 0 {
            throw CommandFailure("\(first): the directory \(target) is not writable (\(String(cString: strerror(errno))))", status: .cannotCreate)
        }
    }

    /// Device name and model, as the file's make and model.
    private func defaultMetadata(_ inputs: [CaptureInput]) -> [MetadataItem] {
        guard let primary = inputs.first(where: { $0.mediaType == .video }) ?? inputs.first else { return [] }
        var items = [MetadataItem.make(primary.source.localizedName)]
        if let model = primary.source.modelID { items.append(.model(model)) } else { items.append(.model(primary.source.localizedName)) }
        return items
    }

    private func exitStatus(reason: RecordingStopReason, error: RecordingError?) -> ExitStatus {
        switch reason {
        case .stopped, .maxDuration, .maxSize, .minFreeSpace, .endOfInput: return .success
        case .deviceDisconnected: return .unavailable
        case .error:
            guard let error else { return .failure }
            return CommandFailure(error).status
        }
    }

    // MARK: Recording delegate

    func fileOutput(_ output: CaptureFileOutput, didPauseRecordingTo path: String) {
        reporter.paused(path: path, statistics: output.statistics, cause: lock.withLock { triggers }?.takePauseCause())
    }

    func fileOutput(_ output: CaptureFileOutput, didResumeRecordingTo path: String) {
        reporter.resumed(path: path, statistics: output.statistics, cause: lock.withLock { triggers }?.takeResumeCause())
    }

    func fileOutput(_ output: CaptureFileOutput, didLose input: CaptureInput, error: RecordingError) {
        let cameras = lock.withLock { cameraInputs }
        let number = (cameras.firstIndex { $0 === input } ?? 0) + 1
        lock.withLock { lostCameras.append(number) }
        reporter.cameraLost(input, camera: number, statistics: output.statistics)
    }

    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
        // No file was made: the recording's end says why, and no event claims one was written.
        guard file.wasCreated else { return }
        switch error {
        case let error? where error.recordingSuccessfullyFinished:
            // A limit or a lost camera ended the recording with this file, which is complete: the end event says which.
            reporter.segment(file, error: nil)
        default:
            reporter.segment(file, error: error)
        }
    }

    func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
        lock.withLock {
            endReason = reason
            endError = error
        }
        done.signal()
    }
}

extension CommandFailure {
    /// The status and message for a capture error.
    init(_ error: CaptureError) {
        switch error {
        case .device(let device): self.init(device)
        case .unsupported: self.init(error.description, status: .usage)
        case .io: self.init(error.description, status: .ioError)
        case .deviceLost: self.init(error.description, status: .unavailable)
        case .source: self.init(error.description, status: .dataError)
        case .configurationLocked(let device, let holder):
            self.init("\(device): locked for configuration by \(holder); try again when it ends, or record with --no-lock", status: .unavailable)
        case .noBandwidth(let device):
            self.init("\(error.description); try a smaller size or rate for it (--video \(device),size=640x480,fps=15), MJPEG (--video \(device),pixel-format=MJPG), or another USB port",
                      status: .unavailable)
        }
    }

    /// The status and message for a recording error.
    init(_ error: RecordingError) {
        switch error {
        case .limitReached: self.init(error.description, status: .success)
        case .cannotCreate: self.init(error.description, status: .cannotCreate)
        case .outputExists(let path): self.init("\(path): already exists; it is never overwritten unless asked (--overwrite)", status: .cannotCreate)
        case .unsupported: self.init(error.description, status: .usage)
        case .containerCannotHold(_, _, let mediaType):
            self.init("\(error.description); choose another --\(mediaType == .video ? "video" : "audio")-codec or container", status: .usage)
        case .copyNeedsCompressedFrames(let pixelFormat):
            self.init("--video-codec copy needs a camera that delivers compressed frames (MJPEG, H.264); this one delivers raw \(pixelFormat) frames", status: .usage)
        case .diskFull, .writeFailed: self.init(error.description, status: .ioError)
        case .nothingWritten: self.init(error.description, status: .dataError)
        case .deviceLost: self.init(error.description, status: .unavailable)
        case .capture(let capture): self.init(capture)
        }
    }
}
