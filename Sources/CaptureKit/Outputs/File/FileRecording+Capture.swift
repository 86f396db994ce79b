/// How samples and the end of inputs reach a recording from the capture
/// threads: samples are queued for the writing thread (a full queue drops
/// and counts), and an input's end becomes a request it takes in turn.
extension FileRecording {
    func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard queue != nil, let index = inputs.firstIndex(where: { $0 === input }) else { return }
        guard recordedMediaTypes.contains(input.mediaType) else { return }
        // A time-lapse goes on with the frames it keeps, on its own time line.
        var sample = sample
        if let timeLapse = timeLapseFrames, case .video(let frame) = sample {
            guard let kept = timeLapse.take(frame, input: index) else { return }
            sample = .video(kept)
        }
        if !firstSampleNoted.load(ordering: .relaxed),
           firstSampleNoted.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            lock.withLock {
                firstSampleTime = sample.presentationTime
                if opensLossesAtFirstSample == true { recordedLosses.open(at: sample.presentationTime) }
            }
        }
        // Frames of a shared encoder's input come from the encoder.
        if sample.mediaType == .video, sharedVideo[index] != nil { return }
        enqueue(sample, of: index, wakingAt: samplesPerWakeup[index])
    }

    /// Queues a sample of input `index` for the writing thread; one that
    /// finds the queue full is lost, and logged at its capture time.
    func enqueue(_ sample: SampleBuffer, of index: Int, wakingAt threshold: Int = 1) {
        guard let queue else { return }
        if !queue.put((index, sample), wakingAt: threshold), !queue.isClosed {
            switch sample {
            case .video(let video): queueLosses.video.record(1, at: video.presentationTime)
            case .audio(let audio): queueLosses.audio.record(audio.frameCount, at: audio.presentationTime)
            }
        }
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
