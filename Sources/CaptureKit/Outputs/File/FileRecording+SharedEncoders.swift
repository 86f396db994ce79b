/// How a recording takes its video from shared encoders: it joins the
/// compression stages of its inputs, takes their frames into its queue,
/// and lets audio wait for the video it goes with.
extension FileRecording {
    /// Video that can share an encoder (same settings as another sink of
    /// the same input) is taken compressed from the input's compression
    /// stage instead of raw from the session.
    func joinSharedEncoders(_ allInputs: [CaptureInput]) throws(RecordingError) {
        let encoders = RecordingEncoders(deliver: { [weak self] index, sample in self?.captureEncoded(sample, input: index) },
                                         failed: { [weak self] error in self?.encoderFailed(error) })
        lock.withLock { sharedEncoders = encoders }
        let recordsVideo = recordedMediaTypes.contains(.video) && allInputs.contains { $0.mediaType == .video }
        let ring = preRollDuration.map { PreRollRing(duration: $0, memoryLimit: preRollMemoryLimit, hasVideo: recordsVideo) }
        lock.withLock { preRollRing = ring }
        let sharesCameras = sharesCameraEncoders(allInputs)
        for (index, input) in allInputs.enumerated() {
            guard sharesCameras, let (settings, keyframeInterval) = try files.sharedVideoSettings(for: input, number: 1) else {
                if ring != nil, input.mediaType == .video, recordedMediaTypes.contains(.video) {
                    throw .unsupported("a pre-roll keeps video as a shared live encoder compresses it (H.264, HEVC or MJPEG from a live source, without B-frames); this recording's video is copied or encoded per file: record H.264 live instead")
                }
                continue
            }
            do throws(WriterError) {
                sharedVideo[index] = try encoders.join(input, index: index, settings: settings, keyframeInterval: keyframeInterval,
                                                       queueCapacity: queueCapacity)
                // The ring joins the same stage (one encoder for both), with
                // keyframes often enough that it holds little beyond its duration.
                let ringInterval = files.settings.keyframeInterval ?? PreRollRing.defaultKeyframeInterval
                try ring?.join(input, index: index, settings: settings, keyframeInterval: ringInterval, queueCapacity: queueCapacity)
            } catch {
                // As the file's own encoder would: the settings it refuses, named with the file.
                if case .invalidSettings(let reason) = error { throw .unsupported("\(files.path(number: 1)): \(reason)") }
                throw RecordingFileFactory.creationError(error, path: files.path(number: 1))
            }
        }
    }

    /// From a compression stage's thread: a compressed frame of input `index`.
    func captureEncoded(_ sample: VideoSampleBuffer, input index: Int) {
        enqueue(.video(sample), of: index)
    }

    /// A shared encoder stopped working: its video has ended, as an input
    /// that failed would, and the recording ends with the error once what
    /// came before is written.
    func encoderFailed(_ error: WriterError) {
        lock.withLock {
            let failure = RecordingError.writeFailed(path: currentPath ?? files.path(number: 1), reason: error.description)
            endedInputsPending.formUnion(sharedVideo.keys)
            inputEndReason = .error
            inputEndError = failure
            commands.append(.stopWhenDrained(.error, failure))
        }
        queue?.wake()
    }

    /// Takes a sample from the queue. Frames arrive after the audio captured
    /// with them: from shared encoders a little after (they were encoded on
    /// the way), from a camera after its own latency, and on a stalled or
    /// starved machine the audio of a whole stall comes in one read before the
    /// frames of it. Audio waits until the video has passed its end (at most
    /// `heldAudioLimit` of it), so that samples are handled in time order and a
    /// pause, a cut or a stop at a frame splits the audio exactly there: audio
    /// written before the request took effect would run past the video (a WebM
    /// paused twice under stalls: 60 ms of audio beyond its 3.13 s of video).
    /// It waits as a copy, so that the microphone's own buffers go back to it at once.
    func handle(_ sample: SampleBuffer, from index: Int) {
        // Once the video has ended, nothing comes to pass the audio.
        guard audioWaitsFor.contains(where: { !endedInputs.contains($0) }) else { return process(sample, from: index) }
        switch sample {
        case .audio(let audio):
            heldAudio.append((index, .audio(audio.copied())))
            releaseHeldAudio(videoAt: videoReach)
        case .video(let video):
            releaseHeldAudio(videoAt: video.presentationTime)
            if ended { return }
            process(sample, from: index)
            if videoReach.map({ video.presentationTime > $0 }) ?? true { videoReach = video.presentationTime }
        }
    }

    /// How far audio may run ahead of a shared encoder's video before it
    /// is handled anyway (an encoder that stopped delivering).
    static let heldAudioLimit = MediaTime(value: 5, timescale: 1).nanoseconds

    /// Handles the held audio that ends by `reach` (all of it with `all`),
    /// and any that runs more than `heldAudioLimit` ahead of the video.
    func releaseHeldAudio(videoAt reach: MediaTime?, all: Bool = false) {
        while let (index, sample) = heldAudio.first, !ended {
            let newest = heldAudio.last.map { sampleEnd($0.1) } ?? sampleEnd(sample)
            let due = all || reach.map { sampleEnd(sample) <= $0 } ?? false
            guard due || newest - sample.presentationTime > Self.heldAudioLimit else { return }
            heldAudio.removeFirst()
            process(sample, from: index)
        }
    }
}
