/// The writing thread's loop: it takes samples from the queue, lets
/// requests take effect (in order; some wait for a keyframe or for the
/// queue to drain), and notices when every input has ended.
extension FileRecording {
    func writingLoop() {
        guard let queue else { return }
        while true {
            let item = queue.take(timeoutNanoseconds: Self.idleTimeout)
            let moreEnded = lock.withLock { () -> Set<Int> in
                defer { endedInputsPending = [] }
                return endedInputsPending
            }
            if !moreEnded.isEmpty {
                endedInputs.formUnion(moreEnded)
                for file in draining + [current].compactMap({ $0 }) {
                    file.awaiting.subtract(moreEnded)
                    // A microphone that went away leaves its track where its audio ended.
                    for part in file.parts { for index in moreEnded { part.writerInputs[index]?.fillsAudioToSessionEnd = false } }
                }
                reportLostCameras(unhandled: item == nil ? 0 : 1)
                drainMark = samplesHandled + (item == nil ? 0 : 1) + queue.queuedCount
            }
            if !heldAudio.isEmpty, !moreEnded.isDisjoint(with: audioWaitsFor) {
                // The video ended: no frame comes to pass the audio.
                releaseHeldAudio(videoAt: nil, all: true)
            }
            if let (index, sample) = item {
                handle(sample, from: index)
                samplesHandled += 1
                idleRounds = 0
                if !lostCamerasToFinish.isEmpty { finishLostCameraFiles() }
                if let mark = drainMark, samplesHandled >= mark, !ended { applyDrainedStops() }
            } else if queue.isClosed && queue.isEmpty {
                releaseHeldAudio(videoAt: nil, all: true)
                break
            } else {
                // Nothing came for a while: audio waits no longer.
                releaseHeldAudio(videoAt: nil, all: true)
                idle()
                if allInputsEnded && queue.isEmpty, current != nil || betweenFiles {
                    // Every source ended (a file played to its end, devices
                    // gone): what was captured is written; the recording ends there.
                    let reason = lock.withLock { inputEndReason } ?? .endOfInput
                    stopDrained(reason: reason, error: reason == .endOfInput ? nil : lock.withLock { inputEndError })
                }
            }
            finishDrainedFiles(force: false)
            if ended { break }
            checkRetentionAge()
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

    /// How long the writing thread waits for a sample before it is idle.
    static let idleTimeout: Int64 = 100_000_000

    /// No sample for a while: requests still take effect, timed by the clock.
    func idle() {
        idleRounds += 1
        finishLostCameraFiles()
        guard current != nil || !draining.isEmpty || betweenFiles else { return }
        // A resume waits for the next sample: its stretch begins at that
        // sample. Timed by the clock, it would begin where the writing
        // stopped, and the pause would stay in the file as a still picture
        // (a time-lapse, or a slow camera, leaves more than this timeout
        // between frames). It waits as long as a frame can be expected (a
        // second, or two of a time-lapse's intervals): past that the camera
        // has stalled, and the resume takes effect by the clock. So do
        // requests waiting for a shared encoder's keyframe (it makes one for
        // the request as its next picture), not those waiting for a copied
        // camera's own.
        let interval = timeLapseFrames.map { $0.timeLapse.interval.converted(toTimescale: MonotonicClock.timescale).value } ?? 0
        let patience = max(1_000_000_000, 2 * interval)
        let stalled = samplesHandled > 0 && Int64(idleRounds) * Self.idleTimeout >= patience
        let commands = takeCommands(drained: true, atKeyframe: stalled && !cutsAtKeyframes, resumesWait: !stalled)
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
    func stopDrained(reason: RecordingStopReason, error: RecordingError?) {
        guard let file = current else { return stopBetweenFiles(reason: reason, error: error) }
        // Everything captured before the stop was handled: so is every loss
        // logged so far, also one of a sample that came after the last one
        // written (a frame the encoder refused, which a file played faster
        // than real time stamps ahead of the clock).
        lock.withLock { recordedLosses.close(at: .positiveInfinity) }
        stop(file, at: lastCommonEnd(file), reason: reason, error: error)
    }

    /// The queue ran empty after a sample (others keep coming, so the
    /// writer is never idle), or every sample queued before an input's end
    /// is handled: stops that waited for it apply now.
    func applyDrainedStops() {
        // Held audio is written first (once the video passes it, or at the next pause in samples).
        guard heldAudio.isEmpty else { return }
        drainMark = nil
        let waiting = lock.withLock { () -> [Command] in
            let taken = commands.filter(\.waitsForDrain)
            commands.removeAll { $0.waitsForDrain }
            return taken
        }
        for case .stopWhenDrained(let reason, let error) in waiting { stopDrained(reason: reason, error: error) }
    }

    /// The requests to apply now; with `drained` false (samples still
    /// queued), a stop that waits for the queue to drain stays pending.
    /// With `atKeyframe` false while the video is copied or comes from a
    /// shared encoder, requests that begin a file or a stretch (switch,
    /// resume) wait for a keyframe, and so does every request behind them:
    /// requests keep their order (a pause asked for after a resume must not
    /// take effect before it and be lost). A resume of a recording that is
    /// not paused does nothing and is dropped, so it holds nothing back. A
    /// stop never waits: the pauses and resumes before it take effect with
    /// it (a resume asked for just before a stop still writes its pre-roll).
    /// With `resumesWait` (no sample to time them), a resume waits for the
    /// next sample as a keyframe wait does.
    func takeCommands(drained: Bool = false, atKeyframe: Bool, resumesWait: Bool = false) -> [Command] {
        let keyframeWait = (cutsAtKeyframes || !sharedVideo.isEmpty) && !atKeyframe
        var willBePaused = paused
        return lock.withLock {
            var taken: [Command] = [], waiting: [Command] = []
            var blocked = false
            for command in commands {
                switch command {
                case .stop:
                    taken += waiting.filter { $0.isPauseOrResume }
                    waiting.removeAll { $0.isPauseOrResume }
                    taken.append(command)
                    continue
                case .resume where !willBePaused:
                    continue
                case .resume:
                    willBePaused = false
                case .pause:
                    willBePaused = true
                case .switchFile, .stopWhenDrained:
                    break
                }
                if keyframeWait && command.beginsAtKeyframe { blocked = true }
                if resumesWait, case .resume = command { blocked = true }
                if blocked || (!drained && command.waitsForDrain) { waiting.append(command) } else { taken.append(command) }
            }
            commands = waiting
            return taken
        }
    }
}
