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
/// switch) take effect at the next video frame (the next audio buffer when
/// there is no video), so a cut always falls between frames and audio is
/// split at exactly that time.
///
/// Threads: requests, statistics and delegate come and go under `lock`;
/// everything marked "writing thread only" is touched by that thread alone
/// once `begin(inputs:)` has started it.
final class FileRecording: @unchecked Sendable {
    // @unchecked: requests, statistics and the delegate are guarded by `lock`; the rest is the writing thread's alone once begin(inputs:) started it (see above).
    // MARK: Configuration, fixed when the recording starts

    private weak var output: CaptureFileOutput?
    private let files: RecordingFileFactory
    private let sampleHandler: ((SampleBuffer, CaptureInput) -> Void)?
    private let queueCapacity: Int
    private let recordedMediaTypes: Set<MediaType>

    init(output: CaptureFileOutput, destination: RecordingFileFactory.Destination, delegate: (any CaptureFileOutputRecordingDelegate)?) {
        self.output = output
        files = RecordingFileFactory(destination: destination, settings: output.settings,
                                     overwritesExistingFiles: output.overwritesExistingFiles, recordedMediaTypes: output.recordedMediaTypes)
        strongDelegate = delegate
        limits = RecordingLimits(maxDuration: output.maxRecordedDuration, maxSize: output.maxRecordedFileSize,
                                 minFreeSpace: output.minFreeDiskSpaceLimit, segmentDuration: output.segmentDuration,
                                 segmentSize: output.segmentFileSize)
        sampleHandler = output.sampleHandler
        queueCapacity = output.queueCapacity
        recordedMediaTypes = output.recordedMediaTypes
    }

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
        lock.withLock { commands.append(.stop(reason, error)) }
    }

    func pause() { lock.withLock { commands.append(.pause) } }
    func resume() {
        lock.withLock { commands.append(.resume) }
        encoders?.requestKeyframe()
    }

    /// Whether the recording has ended (its delegate heard it, or is hearing it now).
    var isOver: Bool { lock.withLock { over } }
    private var over = false

    var isPaused: Bool { lock.withLock { stats.isPaused } }
    var outputFilePath: String? { lock.withLock { currentPath } }

    /// Totals so far.
    var statistics: RecordingStatistics {
        var snapshot = lock.withLock { stats }
        snapshot.droppedByQueue = (queue?.refusedCount ?? 0) + (encoders?.droppedFrames ?? 0)
        snapshot.droppedBeforeKeyframe += encoders?.framesBeforeKeyframe ?? 0
        snapshot.droppedByDevice = inputs.reduce(0) { $0 + $1.source.droppedByDevice }
        return snapshot
    }

    /// Ends a recording that never began (its first file could not be
    /// created, or it was stopped before the session ran): the delegate
    /// hears why.
    func endBeforeBeginning(_ error: RecordingError?, reason: RecordingStopReason = .error) {
        guard !hasBegun else { return }
        ended = true
        encoders?.leaveAll()
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
    private let lock = WriterLock()
    private var strongDelegate: (any CaptureFileOutputRecordingDelegate)?
    private var commands: [Command] = []
    private var stats = RecordingStatistics()
    private var ended = false
    private var currentPath: String?
    /// The writing thread, once it runs (asked from other threads: under `lock`).
    private var writingThreadID: pthread_t?

    // Writing thread only.
    private var inputs: [CaptureInput] = []
    /// For each input, how many of its samples may gather before the writing thread is woken.
    private var samplesPerWakeup: [Int] = []
    private var queue: BoundedQueue<(Int, SampleBuffer)>?
    private var thread: CaptureThread?
    private var current: RecordingFileWriter?
    private var draining: [RecordingFileWriter] = []
    private var fileCount = 0
    private var closedVideoFrames = 0
    private var closedAudioSamples = 0
    private var closedDuration = MediaTime.zero
    private var closedBytes: Int64 = 0
    private var pendingAudio: [(Int, SampleBuffer)] = []
    private var endedInputs: Set<Int> = []
    private var limits: RecordingLimits
    private var stopping: (reason: RecordingStopReason, error: RecordingError?)?
    private var paused = false
    private var sessionStopped = false
    private var latestSourceTime: MediaTime?
    private var immediateSwitch: String??
    /// The shared encoders the video comes from, and the codec each shared
    /// input's frames arrive in (by input position); set in `begin(inputs:)`
    /// before any other thread reaches the recording.
    private var encoders: RecordingEncoders?
    private var sharedVideo: [Int: String] = [:]

    private enum Command {
        case switchFile(String?)
        case pause, resume
        case stop(RecordingStopReason, RecordingError?)
        case stopWhenDrained(RecordingStopReason, RecordingError?)

        var waitsForDrain: Bool {
            if case .stopWhenDrained = self { return true }
            return false
        }

        /// Whether it begins a file or a stretch of one.
        var beginsAtKeyframe: Bool {
            switch self {
            case .switchFile, .resume: return true
            case .pause, .stop, .stopWhenDrained: return false
            }
        }
    }

    // MARK: Beginning

    /// Whether `begin(inputs:)` has run.
    var hasBegun: Bool { thread != nil || ended }

    /// Checks that every input can be written to the files with the
    /// settings (codec allowed in the container …), creates the first file,
    /// and starts the writing thread. Called with the session's opened inputs.
    func begin(inputs allInputs: [CaptureInput]) throws(RecordingError) {
        guard thread == nil, current == nil else { return }
        inputs = allInputs
        samplesPerWakeup = allInputs.map { max(1, $0.source.samplesPerWakeup) }
        let accepted = allInputs.filter { recordedMediaTypes.contains($0.mediaType) }
        hasVideo = accepted.contains { $0.mediaType == .video }
        guard !accepted.isEmpty else {
            throw .unsupported("nothing to record: this output records \(recordedMediaTypes.map(\.rawValue).sorted().joined(separator: " and ")), and the session has no such input")
        }
        let file: RecordingFileWriter
        do throws(RecordingError) {
            try joinSharedEncoders(allInputs)
            file = try files.open(number: 1, inputs: inputs, sharedVideo: sharedVideo)
        } catch {
            encoders?.leaveAll()
            throw error
        }
        lock.withLock { currentPath = file.path }
        settleKeyframeRules(file)
        current = file
        queue = BoundedQueue(capacity: queueCapacity)
        thread = CaptureThread(name: "writer") { [self] in
            lock.withLock { writingThreadID = pthread_self() }
            writingLoop()
        }
    }

    /// Video that can share an encoder (same settings as another sink of
    /// the same input) is taken compressed from the input's compression
    /// stage instead of raw from the session.
    private func joinSharedEncoders(_ allInputs: [CaptureInput]) throws(RecordingError) {
        let encoders = RecordingEncoders(deliver: { [weak self] index, sample in self?.captureEncoded(sample, input: index) },
                                         failed: { [weak self] error in self?.encoderFailed(error) })
        self.encoders = encoders
        for (index, input) in allInputs.enumerated() {
            guard let (settings, keyframeInterval) = try files.sharedVideoSettings(for: input, number: 1) else { continue }
            do throws(WriterError) {
                sharedVideo[index] = try encoders.join(input, index: index, settings: settings, keyframeInterval: keyframeInterval,
                                                       queueCapacity: queueCapacity)
            } catch {
                // As the file's own encoder would: the settings it refuses, named with the file.
                if case .invalidSettings(let reason) = error { throw .unsupported("\(files.path(number: 1)): \(reason)") }
                throw RecordingFileFactory.creationError(error, path: files.path(number: 1))
            }
        }
    }

    // MARK: From the capture threads

    func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard let queue, let index = inputs.firstIndex(where: { $0 === input }) else { return }
        guard recordedMediaTypes.contains(input.mediaType) else { return }
        // Frames of a shared encoder's input come from the encoder.
        if sample.mediaType == .video, sharedVideo[index] != nil { return }
        queue.put((index, sample), wakingAt: samplesPerWakeup[index])
    }

    /// From a compression stage's thread: a compressed frame of input `index`.
    private func captureEncoded(_ sample: VideoSampleBuffer, input index: Int) {
        queue?.put((index, .video(sample)))
    }

    /// A shared encoder stopped working: the recording ends with the error.
    private func encoderFailed(_ error: WriterError) {
        let path = lock.withLock { currentPath } ?? files.path(number: 1)
        lock.withLock { commands.append(.stop(.error, .writeFailed(path: path, reason: error.description))) }
        queue?.wake()
    }

    /// An input ended by itself: the recording ends once what it captured
    /// is written, with the reason (a device lost finishes the file as
    /// device-disconnected, a failure as an error, a file at its end).
    func input(_ input: CaptureInput, didEnd end: CaptureEnd) {
        guard let index = inputs.firstIndex(where: { $0 === input }), recordedMediaTypes.contains(input.mediaType) else { return }
        lock.withLock {
            endedInputsPending.insert(index)
            switch end {
            case .deviceLost(let device):
                inputEndReason = .deviceDisconnected
                inputEndError = .deviceLost(device)
                commands.append(.stopWhenDrained(.deviceDisconnected, .deviceLost(device)))
            case .failed(let error):
                inputEndReason = .error
                inputEndError = .capture(error)
                commands.append(.stopWhenDrained(.error, .capture(error)))
            case .endOfInput:
                commands.append(.stopWhenDrained(.endOfInput, nil))
            case .stopped:
                break
            }
        }
        // Samples may be gathering (see `samplesPerWakeup`), and the writing
        // thread should learn of the end now rather than at its next timeout.
        queue?.wake()
    }

    private var endedInputsPending: Set<Int> = []
    private var inputEndReason: RecordingStopReason?
    private var inputEndError: RecordingError?

    private var allInputsEnded: Bool {
        let recorded = Set(inputs.indices.filter { recordedMediaTypes.contains(inputs[$0].mediaType) })
        return !recorded.isEmpty && recorded.isSubset(of: endedInputs)
    }

    // MARK: The writing thread

    /// Whether a video input is recorded, settled in `begin(inputs:)`
    /// (asked for every sample, so not worked out again each time).
    private var hasVideo = false
    /// Whether the video has inter frames (H.264/HEVC from a camera or a
    /// file), so that a recording starts at its first keyframe; settled in
    /// `begin(inputs:)`.
    private var startsAtKeyframe = false
    /// Whether that video is copied as it is: then every file, segment and
    /// resumed stretch begins at a keyframe too, or its first frames could
    /// not be decoded.
    private var cutsAtKeyframes = false

    private func settleKeyframeRules(_ file: RecordingFileWriter) {
        startsAtKeyframe = false
        cutsAtKeyframes = false
        for (index, input) in inputs.enumerated() where input.mediaType == .video && recordedMediaTypes.contains(.video) {
            // Shared encoders make keyframes where they are asked for: at
            // a segment's end, set in advance; requests wait for theirs.
            if sharedVideo[index] != nil {
                startsAtKeyframe = true
                continue
            }
            guard case .compressed(let codec)? = input.source.videoFormat?.layout, AccessUnit.Codec(codecName: codec) != nil else { continue }
            startsAtKeyframe = true
            if index < file.writerInputs.count, file.writerInputs[index]?.takesCompressedSamples == true { cutsAtKeyframes = true }
        }
    }

    private func writingLoop() {
        guard let queue else { return }
        while true {
            let item = queue.take(timeoutNanoseconds: 100_000_000)
            let moreEnded = lock.withLock { () -> Set<Int> in
                defer { endedInputsPending = [] }
                return endedInputsPending
            }
            if !moreEnded.isEmpty {
                endedInputs.formUnion(moreEnded)
                for file in draining + [current].compactMap({ $0 }) { file.awaiting.subtract(moreEnded) }
            }
            if !heldAudio.isEmpty, !moreEnded.isDisjoint(with: sharedVideo.keys) {
                // The video ended: no frame comes to pass the audio.
                releaseHeldAudio(videoAt: nil, all: true)
            }
            if let (index, sample) = item {
                handle(sample, from: index)
            } else if queue.isClosed && queue.isEmpty {
                releaseHeldAudio(videoAt: nil, all: true)
                break
            } else {
                // Nothing came for a while: audio waits no longer.
                releaseHeldAudio(videoAt: nil, all: true)
                idle()
                if allInputsEnded && queue.isEmpty, let file = current {
                    // Every source ended (a file played to its end, devices
                    // gone): what was captured is written; the recording ends there.
                    let reason = lock.withLock { inputEndReason } ?? .endOfInput
                    stop(file, at: lastCommonEnd(file), reason: reason, error: reason == .endOfInput ? nil : lock.withLock { inputEndError })
                }
            }
            finishDrainedFiles(force: false)
            if ended { break }
        }
        // The session stopped (or the recording ended): finish what is open.
        if !ended {
            if let current {
                let cut = lastCommonEnd(current)
                beginCut(current, at: cut)
                self.current = nil
            }
            finishDrainedFiles(force: true)
            endRecording(reason: stopping?.reason ?? .stopped, error: stopping?.error)
        }
        // Anything still queued is released (V4L2 buffers go back to the driver).
        while queue.take(timeoutNanoseconds: 0) != nil {}
    }

    /// No sample for a while: requests still take effect, timed by the clock.
    private func idle() {
        guard current != nil || !draining.isEmpty else { return }
        let commands = takeCommands(drained: true, atKeyframe: false)
        guard !commands.isEmpty else { return }
        // Where the samples written so far end: the last frame counted keeps
        // its time in the file.
        let now = current.map(lastCommonEnd) ?? latestSourceTime ?? MonotonicClock.now()
        for command in commands {
            if case .stopWhenDrained(let reason, let error) = command {
                stopDrained(reason: reason, error: error)
            } else {
                apply(command, at: now)
            }
        }
    }

    /// A stop that waited for the queue: at the end of the last sample written.
    private func stopDrained(reason: RecordingStopReason, error: RecordingError?) {
        guard let file = current else { return }
        stop(file, at: lastCommonEnd(file), reason: reason, error: error)
    }

    /// The queue ran empty after a sample (others keep coming, so the
    /// writer is never idle): stops that waited for it apply now.
    private func applyDrainedStops() {
        // Held audio is written first (once the video passes it, or at the next pause in samples).
        guard heldAudio.isEmpty else { return }
        let waiting = lock.withLock { () -> [Command] in
            let taken = commands.filter(\.waitsForDrain)
            commands.removeAll { $0.waitsForDrain }
            return taken
        }
        for case .stopWhenDrained(let reason, let error) in waiting { stopDrained(reason: reason, error: error) }
    }

    /// The requests to apply now; with `drained` false (samples still
    /// queued), a stop that waits for the queue to drain stays pending.
    /// With `atKeyframe` false while copied video cuts at keyframes,
    /// requests that begin a file or a stretch (switch, resume) wait for one.
    private func takeCommands(drained: Bool = false, atKeyframe: Bool) -> [Command] {
        let keyframeWait = (cutsAtKeyframes || !sharedVideo.isEmpty) && !atKeyframe
        return lock.withLock {
            let waits = { (command: Command) in (!drained && command.waitsForDrain) || (keyframeWait && command.beginsAtKeyframe) }
            let taken = commands.filter { !waits($0) }
            commands = commands.filter(waits)
            return taken
        }
    }

    /// Takes a sample from the queue. Frames from shared encoders arrive a
    /// little after the audio captured with them (they were encoded on the
    /// way): audio waits until the video has passed its end (at most a
    /// second of it), so that samples are handled in time order and a cut
    /// at a frame splits the audio exactly there.
    private func handle(_ sample: SampleBuffer, from index: Int) {
        guard !sharedVideo.isEmpty else { return process(sample, from: index) }
        switch sample {
        case .audio:
            heldAudio.append((index, sample))
            releaseHeldAudio(videoAt: videoReach)
        case .video(let video):
            releaseHeldAudio(videoAt: video.presentationTime)
            if ended { return }
            process(sample, from: index)
            if videoReach.map({ video.presentationTime > $0 }) ?? true { videoReach = video.presentationTime }
        }
    }

    /// Audio waiting for the video (writing thread only), and the latest video frame's time.
    private var heldAudio: [(Int, SampleBuffer)] = []
    private var videoReach: MediaTime?

    /// Handles the held audio that ends by `reach` (all of it with `all`),
    /// and any that runs more than a second ahead of the video.
    private func releaseHeldAudio(videoAt reach: MediaTime?, all: Bool = false) {
        while let (index, sample) = heldAudio.first, !ended {
            let newest = heldAudio.last.map { sampleEnd($0.1) } ?? sampleEnd(sample)
            let due = all || reach.map { sampleEnd(sample) <= $0 } ?? false
            guard due || newest - sample.presentationTime > MediaTime(value: 1, timescale: 1).nanoseconds else { return }
            heldAudio.removeFirst()
            process(sample, from: index)
        }
    }

    private func process(_ sample: SampleBuffer, from index: Int) {
        let input = inputs[index]
        let time = sample.presentationTime
        let isLead = hasVideo ? sample.mediaType == .video : true
        let keyframe = isKeyframe(sample)
        if latestSourceTime.map({ time > $0 }) ?? true { latestSourceTime = time }

        if isLead {
            for command in takeCommands(atKeyframe: keyframe) { apply(command, at: time) }
            if ended { return }
        }
        immediateSwitch = nil
        sampleHandler?(sample, input)
        if let request = immediateSwitch {
            immediateSwitch = nil
            apply(.switchFile(request), at: time)
        }
        if ended { return }

        if let file = current {
            if file.sessionStart == nil && !paused && file.closedDuration == .zero && file.latestEnd == nil && file.cutTime == nil {
                // The first file starts at the first video frame (or audio
                // buffer): earlier audio waits and is trimmed to that time.
                if isLead {
                    // Frames before a stream's first keyframe cannot be decoded.
                    if startsAtKeyframe && !keyframe {
                        file.videoSamplesTaken += 1
                        lock.withLock { stats.droppedBeforeKeyframe += 1 }
                        return
                    }
                    startSession(file, at: time)
                } else {
                    pendingAudio.append((index, sample))
                    if pendingAudio.count > 200 { pendingAudio.removeFirst() }
                    return
                }
            }
            // Audio in a movie checks only the limits whose cut time is known
            // ahead (duration, segment duration): video frames arriving late,
            // or far apart, must not let audio run past them.
            checkLimits(file, at: time, sample: sample, timedOnly: !isLead)
        }
        if ended { return }

        let end = sampleEnd(sample)
        for file in draining {
            if let cut = file.cutTime, time < cut { append(sample, from: index, to: file) }
            if let cut = file.cutTime, end >= cut { file.awaiting.remove(index) }
        }
        if let file = current {
            append(sample, from: index, to: file)
            if !pendingAudio.isEmpty {
                let waiting = pendingAudio
                pendingAudio = []
                for (audioIndex, audio) in waiting { append(audio, from: audioIndex, to: file) }
            }
            if let cut = file.cutTime, end >= cut { file.awaiting.remove(index) }
        }
        publishStatistics()
        if queue?.isEmpty == true { applyDrainedStops() }
    }

    private func sampleEnd(_ sample: SampleBuffer) -> MediaTime {
        switch sample {
        case .video(let video): return video.presentationTime
        case .audio(let audio): return audio.presentationTime + audio.duration
        }
    }

    private func startSession(_ file: RecordingFileWriter, at time: MediaTime) {
        do {
            try file.writer.startSession(atSourceTime: time)
            file.sessionStart = time
            file.lastSession = (time, nil)
            // A shared encoder makes a keyframe where the segment will end.
            if limits.segmentDuration.isNumeric {
                encoders?.requestKeyframe(at: time + (limits.segmentDuration.nanoseconds - file.closedDuration))
            }
            if !file.startedReported {
                file.startedReported = true
                delegateCall { $1.fileOutput($0, didStartRecordingTo: file.path) }
            }
        } catch {
            fail(RecordingFileFactory.writeError(error, path: file.path), file: file)
        }
    }

    /// Writes `sample` into `file` and counts what it lost; a failure of
    /// the file (not of one sample) fails the recording.
    private func append(_ sample: SampleBuffer, from index: Int, to file: RecordingFileWriter) {
        do throws(WriterError) {
            let lost = try file.append(sample, input: index)
            if lost.beforeKeyframe > 0 || lost.refused > 0 {
                lock.withLock {
                    stats.droppedBeforeKeyframe += lost.beforeKeyframe
                    stats.droppedByWriter += lost.refused
                }
            }
        } catch {
            fail(RecordingFileFactory.writeError(file.writer.error ?? error, path: file.path), file: file)
        }
    }

    // MARK: Requests

    private func apply(_ command: Command, at time: MediaTime) {
        guard let file = current else { return }
        switch command {
        case .pause:
            guard !paused else { return }
            paused = true
            if let start = file.sessionStart {
                let end = max(time, start)
                do { try file.writer.endSession(atSourceTime: end) } catch { fail(RecordingFileFactory.writeError(error, path: file.path), file: file); return }
                file.closedDuration = file.closedDuration + (end - start)
                file.sessionStart = nil
                file.lastSession?.end = end
            }
            lock.withLock { stats.isPaused = true }
            delegateCall { $1.fileOutput($0, didPauseRecordingTo: file.path) }
        case .resume:
            guard paused else { return }
            paused = false
            lock.withLock { stats.isPaused = false }
            startSession(file, at: max(time, file.latestEnd ?? time))
            delegateCall { $1.fileOutput($0, didResumeRecordingTo: file.path) }
        case .switchFile(let path):
            switchFile(from: file, at: time, to: path)
        case .stop(let reason, let error), .stopWhenDrained(let reason, let error):
            stop(file, at: time, reason: reason, error: error)
        }
    }

    private func switchFile(from file: RecordingFileWriter, at time: MediaTime, to path: String?) {
        let next: RecordingFileWriter
        do {
            next = try files.open(number: fileCount + 2, path: path, inputs: inputs, sharedVideo: sharedVideo)
            lock.withLock { currentPath = next.path }
        } catch {
            stop(file, at: time, reason: .error, error: error)
            return
        }
        fileCount += 1
        let wasPaused = file.sessionStart == nil && paused
        beginCut(file, at: time)
        current = next
        if !wasPaused { startSession(next, at: time) }
    }

    /// Ends `file`'s session at `time` and sets it draining: samples before
    /// the cut that are still on their way are written, then it is finished.
    private func beginCut(_ file: RecordingFileWriter, at time: MediaTime) {
        if let start = file.sessionStart {
            let end = max(time, start)
            try? file.writer.endSession(atSourceTime: end)
            file.closedDuration = file.closedDuration + (end - start)
            file.sessionStart = nil
            file.lastSession?.end = end
        }
        file.cutTime = time
        file.cutRequestedAt = MonotonicClock.nowNanoseconds()
        file.awaiting = Set(inputs.indices.filter { file.writerInputs.indices.contains($0) && file.writerInputs[$0] != nil }).subtracting(endedInputs)
        draining.append(file)
        closedDuration = closedDuration + file.closedDuration
        delegateCall { $1.fileOutput($0, willFinishRecordingTo: file.path, error: nil) }
    }

    private func stop(_ file: RecordingFileWriter, at time: MediaTime, reason: RecordingStopReason, error: RecordingError?) {
        stopping = (reason, error)
        beginCut(file, at: time)
        current = nil
        finishDrainedFiles(force: false)
        if draining.isEmpty { endRecording(reason: reason, error: error) }
    }

    /// Where the tracks all have samples up to: the earliest of their latest ends.
    private func lastCommonEnd(_ file: RecordingFileWriter) -> MediaTime {
        file.latestEnd ?? latestSourceTime ?? MonotonicClock.now()
    }

    /// Finishes draining files whose inputs have all passed the cut (or,
    /// with `force` or after 2 s, whatever they have).
    private func finishDrainedFiles(force: Bool) {
        let now = MonotonicClock.nowNanoseconds()
        var remaining: [RecordingFileWriter] = []
        for file in draining {
            if force || file.awaiting.isEmpty || now - file.cutRequestedAt > 2_000_000_000 {
                finish(file)
            } else {
                remaining.append(file)
            }
        }
        draining = remaining
        if draining.isEmpty, current == nil, let stopping, !ended {
            endRecording(reason: stopping.reason, error: stopping.error)
        }
    }

    private func finish(_ file: RecordingFileWriter) {
        var error: RecordingError?
        let before = file.videoWriterCounts
        if file.writer.status == .writing {
            do { try file.writer.finishWriting() } catch let failure { error = RecordingFileFactory.writeError(failure, path: file.path) }
        } else if let failure = file.writer.error {
            error = RecordingFileFactory.writeError(failure, path: file.path)
        }
        // Pictures a decoder held until the end are in the file too.
        let after = file.videoWriterCounts
        file.videoFrames += max(0, after.written - before.written)
        if after.skipped > before.skipped { lock.withLock { stats.droppedBeforeKeyframe += after.skipped - before.skipped } }
        if error == nil, file.videoFrames == 0, file.videoSamplesTaken > 0 {
            // Frames were captured for this file and none could be written.
            let skipped = after.skipped
            let reason = skipped > 0 ? "no keyframe arrived to start decoding at; \(skipped) frames came before one and were dropped"
                                     : "the writer could use none of its \(file.videoSamplesTaken) frames"
            error = .nothingWritten(path: file.path, reason: reason)
        }
        if case .nothingWritten? = error, access(file.path, F_OK) != 0 {
            // The writer removed a file with nothing decodable in it.
            file.videoFrames = 0
            file.audioSamples = 0
        }
        let bytes = RecordingFileWriter.size(of: file.path)
        closedBytes += bytes
        let record = RecordedFile(path: file.path, index: file.index, duration: file.closedDuration, bytes: bytes,
                                  videoFrames: file.videoFrames, audioSamples: file.audioSamples, isComplete: error == nil)
        closedVideoFrames += file.videoFrames
        closedAudioSamples += file.audioSamples
        lock.withLock { stats.files.append(file.path) }
        publishStatistics()
        delegateCall { $1.fileOutput($0, didFinishRecordingTo: record, error: error) }
        if let error, stopping == nil || stopping?.error == nil { stopping = (.error, error) }
    }

    private func fail(_ error: RecordingError, file: RecordingFileWriter) {
        guard stopping == nil || stopping?.reason != .error else { return }
        stopping = (.error, error)
        if current === file {
            current = nil
            // Cut where its samples end, so that its duration is counted.
            beginCut(file, at: file.latestEnd ?? latestSourceTime ?? MonotonicClock.now())
        }
        finishDrainedFiles(force: true)
    }

    private func endRecording(reason: RecordingStopReason, error: RecordingError?) {
        guard !ended else { return }
        ended = true
        queue?.close()
        encoders?.leaveAll()
        publishStatistics()
        endRecordingReported(reason: reason, error: error)
    }

    private func endRecordingReported(reason: RecordingStopReason, error: RecordingError?) {
        // Over before the delegate hears it, so that it may start the next recording.
        let delegate = lock.withLock { () -> (any CaptureFileOutputRecordingDelegate)? in
            over = true
            defer { strongDelegate = nil }
            return strongDelegate
        }
        if let output, let delegate { delegate.fileOutput(output, didEndRecordingWith: reason, error: error) }
    }

    // MARK: Limits

    /// Stops or switches files when a limit is reached (see `RecordingLimits`).
    private func checkLimits(_ file: RecordingFileWriter, at time: MediaTime, sample: SampleBuffer, timedOnly: Bool) {
        switch limits.decision(for: file, sample: sample, at: time, timedOnly: timedOnly,
                               closedDuration: closedDuration, closedBytes: closedBytes, timedCutsAtKeyframes: cutsAtKeyframes,
                               sizeCutsAtKeyframes: cutsAtKeyframes || !sharedVideo.isEmpty) {
        case .none: break
        case .stop(let cut, let reason): stop(file, at: cut, reason: reason, error: .limitReached(reason))
        case .switchFile(let cut): switchFile(from: file, at: cut, to: nil)
        case .keyframeNeeded:
            // Once per file: the stage's next picture is the keyframe.
            if !file.askedForKeyframe {
                file.askedForKeyframe = true
                encoders?.requestKeyframe()
            }
        }
    }

    private func isKeyframe(_ sample: SampleBuffer) -> Bool {
        if case .video(let video) = sample { return video.isKeyframe }
        return false
    }

    // MARK: Reporting

    private func publishStatistics() {
        // Runs for every sample: sums in place rather than building an array of the open files.
        let duration = closedDuration + (current.map { $0.duration(upTo: nil) } ?? .zero)
        var bytes = closedBytes, frames = 0, samples = 0
        func add(_ file: RecordingFileWriter) {
            bytes += file.writer.bytesWritten
            frames += file.videoFrames
            samples += file.audioSamples
        }
        for file in draining { add(file) }
        if let current { add(current) }
        lock.withLock {
            stats.duration = duration
            stats.bytes = bytes
            stats.videoFrames = closedVideoFrames + frames
            stats.audioSamples = closedAudioSamples + samples
        }
    }

    private func delegateCall(_ body: (CaptureFileOutput, any CaptureFileOutputRecordingDelegate) -> Void) {
        guard let output, let delegate = lock.withLock({ strongDelegate }) else { return }
        body(output, delegate)
    }
}

