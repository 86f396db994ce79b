/// How samples and the end of inputs reach a recording from the capture
/// threads: samples are queued for the writing thread (a full queue drops
/// and counts), and an input's end becomes a request it takes in turn.
extension FileRecording {
    func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard let queue, let index = inputs.firstIndex(where: { $0 === input }) else { return }
        guard recordedMediaTypes.contains(input.mediaType) else { return }
        // Frames of a shared encoder's input come from the encoder.
        if sample.mediaType == .video, sharedVideo[index] != nil { return }
        queue.put((index, sample), wakingAt: samplesPerWakeup[index])
    }

    /// An input ended by itself: the recording ends once what it captured
    /// is written, with the reason (a device lost finishes the file as
    /// device-disconnected, a failure as an error, a file at its end).
    func input(_ input: CaptureInput, didEnd end: CaptureEnd) {
        guard let index = inputs.firstIndex(where: { $0 === input }), recordedMediaTypes.contains(input.mediaType) else { return }
        if continuesWithout(index, after: end) {
            queue?.wake()
            return
        }
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

    var allInputsEnded: Bool {
        let recorded = Set(inputs.indices.filter { recordedMediaTypes.contains(inputs[$0].mediaType) })
        return !recorded.isEmpty && recorded.isSubset(of: endedInputs)
    }
}
