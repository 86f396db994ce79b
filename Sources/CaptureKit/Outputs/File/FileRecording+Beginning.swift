import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A recording beginning: its inputs checked, its first file made, its
/// writing thread started.
extension FileRecording {
    // MARK: Beginning

    /// Whether `begin(inputs:)` has run.
    var hasBegun: Bool { thread != nil || ended }

    /// Checks that every input can be written to the files with the
    /// settings (codec allowed in the container …), creates the first file,
    /// and starts the writing thread. Called with the session's opened inputs.
    func begin(inputs sessionInputs: [CaptureInput]) throws(RecordingError) {
        guard thread == nil, current == nil else { return }
        // A disabled connection leaves its input out; the others' settle how their tracks are shown.
        let allInputs = sessionInputs.filter { output?.isConnectionEnabled(for: $0) ?? true }
        files.transforms = Dictionary(uniqueKeysWithValues: allInputs.compactMap { input in
            output?.connection(from: input).map { (ObjectIdentifier(input), $0.transform) }
        })
        inputs = allInputs
        samplesPerWakeup = allInputs.map { max(1, $0.source.samplesPerWakeup) }
        let accepted = allInputs.filter { recordedMediaTypes.contains($0.mediaType) }
        hasVideo = accepted.contains { $0.mediaType == .video }
        severalCameras = accepted.filter { $0.mediaType == .video }.count > 1
        guard !accepted.isEmpty else {
            throw .unsupported("nothing to record: this output records \(recordedMediaTypes.map(\.rawValue).sorted().joined(separator: " and ")), and the session has no such input")
        }
        // The queue first: a shared encoder delivers into it as soon as it is joined.
        queue = BoundedQueue(capacity: queueCapacity)
        // Asked to pause before it began: armed, with no file until the first resume.
        let armed = lock.withLock { () -> Bool in
            guard case .pause? = commands.first else { return false }
            commands.removeFirst()
            return true
        }
        let file: RecordingFileWriter
        do throws(RecordingError) {
            try checkTimeLapse(accepted)
            try checkCameras(allInputs)
            try joinSharedEncoders(allInputs)
            file = try files.open(number: 1, path: armed ? try armedCheckPath() : nil, inputs: inputs, sharedVideo: sharedVideo)
        } catch {
            encoders?.leaveAll()
            preRoll?.leaveAll()
            throw error
        }
        settleKeyframeRules(file)
        audioWaitsFor = timeLapseFrames == nil
            ? Set(inputs.indices.filter { inputs[$0].mediaType == .video && recordedMediaTypes.contains(.video) })
            : Set(sharedVideo.keys)
        let encoderLosses = encoders?.lossLogs ?? []
        lock.withLock {
            // A time-lapse loses a frame from its file only when a tick has none
            // near it: what a device dropped between the ticks is not missed.
            recordedLosses = RecordedLosses(devices: timeLapseFrames == nil ? accepted.map(\.source) : [],
                                            queues: [(queueLosses.video, .video), (queueLosses.audio, .audio)] + encoderLosses.map { ($0, .video) }
                                                + (timeLapseFrames == nil ? processorLosses(accepted) : []),
                                            missing: timeLapseFrames.map { [$0.misses] } ?? [])
            opensLossesAtFirstSample = !armed
            if !armed, let time = firstSampleTime { recordedLosses.open(at: time) }
        }
        if armed {
            file.cancelWriting()
            beginArmed()
        } else {
            lock.withLock {
                (currentPath, currentPaths) = (file.path, file.parts.map(\.path))
                markerAnchor.path = file.path
            }
            current = file
        }
        do {
            thread = try CaptureThread.start(name: "writer") { [self] in
                lock.withLock { writingThreadID = pthread_self() }
                writingLoop()
            }
        } catch {
            // Nothing would write the file: it is taken back, and the recording refused.
            if !armed { file.cancelWriting() }
            current = nil
            encoders?.leaveAll()
            preRoll?.leaveAll()
            // Armed, `file` was only the folder's check: the recording's first file is what failed.
            throw .writeFailed(path: armed ? files.path(number: 1) : file.path, reason: "cannot start the writing thread: \(error)")
        }
    }
}

extension FileRecording {
    /// The frames the cameras' frame processors left out (damaged compressed
    /// frames an overlay could not decode): lost from the file as a full
    /// queue's are, counted where they fall inside what is recorded.
    func processorLosses(_ inputs: [CaptureInput]) -> [(SampleLossLog, MediaType)] {
        inputs.filter { $0.mediaType == .video }.compactMap { $0.videoFrameProcessor?.losses }.map { ($0, .video) }
    }
}
