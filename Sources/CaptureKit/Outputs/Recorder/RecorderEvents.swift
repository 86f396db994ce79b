import Synchronization

/// What the outputs of a `CaptureRecorder` tell it, turned into the
/// recorder's rules and its delegate's calls. A type of its own so that
/// the recorder's public face carries no output delegate methods; it holds
/// the recorder weakly (the recorder holds it).
final class RecorderEvents: CaptureFileOutputRecordingDelegate, LiveStreamOutputDelegate, Sendable {
    private struct Link { weak var recorder: CaptureRecorder? }
    private let link = Mutex(Link())

    func attach(_ recorder: CaptureRecorder) { link.withLock { $0.recorder = recorder } }

    private var recorder: CaptureRecorder? { link.withLock { $0.recorder } }

    /// The recorder and its delegate, when both are still there.
    private func withDelegate(_ body: (CaptureRecorder, any CaptureRecorderDelegate) -> Void) {
        guard let recorder, let delegate = recorder.state.withLock({ $0.delegate }) else { return }
        body(recorder, delegate)
    }

    // MARK: The file output

    func fileOutput(_ output: CaptureFileOutput, didPauseRecordingTo path: String, cause: RecordingPauseCause) {
        withDelegate { $1.recorder($0, didPauseRecordingTo: path, cause: cause) }
    }

    func fileOutput(_ output: CaptureFileOutput, didResumeRecordingTo path: String, cause: RecordingPauseCause) {
        withDelegate { $1.recorder($0, didResumeRecordingTo: path, cause: cause) }
    }

    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
        withDelegate { $1.recorder($0, didFinishRecordingTo: file, error: error) }
    }

    func fileOutput(_ output: CaptureFileOutput, didDeleteFile path: String, bytes: Int64, reason: RecordingFileDeletionReason) {
        withDelegate { $1.recorder($0, didDeleteFile: path, bytes: bytes, reason: reason) }
    }

    func fileOutput(_ output: CaptureFileOutput, didLose input: CaptureInput, error: RecordingError) {
        guard let recorder else { return }
        let number = recorder.state.withLock { state -> Int in
            let number = (state.cameras.firstIndex { $0 === input } ?? 0) + 1
            state.lostCameras.append(number)
            return number
        }
        withDelegate { $1.recorder($0, didLoseCamera: number, input: input) }
    }

    func fileOutput(_ output: CaptureFileOutput, didDetectMotionAt time: MediaTime, score: Double) {
        withDelegate { $1.recorder($0, didSeeMotion: true, score: score) }
    }

    func fileOutput(_ output: CaptureFileOutput, didEndMotionAt time: MediaTime, score: Double) {
        withDelegate { $1.recorder($0, didSeeMotion: false, score: score) }
    }

    func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
        guard let recorder else { return }
        recorder.state.withLock { $0.fileEnd = (reason, error) }
        // The streams end where the file does.
        for stream in recorder.streamOutputs { stream.stopStreaming() }
        recorder.markEnded()
    }

    // MARK: The streams

    private func index(of output: LiveStreamOutput, in recorder: CaptureRecorder) -> Int {
        (recorder.streamOutputs.firstIndex { $0 === output } ?? 0) + 1
    }

    func liveStreamOutputDidConnect(_ output: LiveStreamOutput) {
        withDelegate { recorder, delegate in
            delegate.recorder(recorder, streamDidConnect: index(of: output, in: recorder), destination: output.destination,
                              connections: output.statistics.connections)
        }
    }

    func liveStreamOutput(_ output: LiveStreamOutput, didDisconnectWith error: WriterError) {
        withDelegate { recorder, delegate in
            delegate.recorder(recorder, streamDidDisconnect: index(of: output, in: recorder), destination: output.destination, error: error)
        }
        guard let recorder, recorder.configuration.streamsAreRequired else { return }
        requiredStreamFailed(output, error: error, in: recorder)
    }

    func liveStreamOutput(_ output: LiveStreamOutput, willReconnectAfter delay: MediaTime, attempt: Int) {
        guard let recorder else { return }
        // A required stream is not retried: the recording ends instead.
        if recorder.configuration.streamsAreRequired {
            output.stopStreaming()
            return
        }
        withDelegate { recorder, delegate in
            delegate.recorder(recorder, streamWillReconnect: index(of: output, in: recorder), destination: output.destination,
                              after: delay, attempt: attempt)
        }
    }

    func liveStreamOutput(_ output: LiveStreamOutput, didFinishWith reason: LiveStreamEndReason, statistics: LiveStreamStatistics) {
        guard let recorder else { return }
        let number = index(of: output, in: recorder)
        if case .failed(let error) = reason {
            withDelegate { $1.recorder($0, streamDidDisconnect: number, destination: output.destination, error: error) }
        }
        recorder.state.withLock { $0.streamEnds.append((number, reason)) }
        if recorder.configuration.streamsAreRequired, case .failed(let error) = reason {
            requiredStreamFailed(output, error: error, in: recorder)
        }
        recorder.endIfStreamsOver(force: false)
    }

    /// A required stream failed: the recording ends (its files complete).
    private func requiredStreamFailed(_ output: LiveStreamOutput, error: WriterError, in recorder: CaptureRecorder) {
        let first = recorder.state.withLock { state -> Bool in
            guard state.requiredFailure == nil else { return false }
            state.requiredFailure = CaptureRecorderStreamFailure(index: index(of: output, in: recorder), destination: output.destination, error: error)
            return true
        }
        guard first else { return }
        if let fileOutput = recorder.fileOutput { fileOutput.stopRecording() } else { recorder.markEnded() }
    }
}
