#if canImport(Glibc)
import Glibc
#endif

/// A recording's pauses and resumes (writing thread only). A pause ends
/// the file's session and arms the pre-roll; when each event gets a file of
/// its own, it also finishes the file, so that an event's file is complete
/// as soon as the event ends. A resume opens the next file when none is
/// open, writes what the pre-roll kept, and runs on from there.
extension FileRecording {
    func pause(_ file: RecordingFileWriter, at time: MediaTime) {
        guard !paused else { return }
        paused = true
        pausedAudio = []
        if let start = file.sessionStart {
            let end = max(time, start)
            do { try file.endSession(atSourceTime: end) } catch { fail(RecordingFileFactory.writeError(error, path: file.path), file: file); return }
            file.closedDuration = file.closedDuration + (end - start)
            file.sessionStart = nil
            file.lastSession?.end = end
            lock.withLock { recordedLosses.close(at: end) }
        }
        lock.withLock { recordedLosses.close(at: time) }
        lock.withLock { stats.isPaused = true }
        preRoll?.arm(from: time)
        let cause = takePauseCause()
        delegateCall { $1.fileOutput($0, didPauseRecordingTo: file.path, cause: cause) }
        if file.latestEnd == nil {
            // Nothing was written into it (a resume and a pause at the same
            // frame, or paused before its first frame): no empty file waits
            // on disk for the next resume, which makes it. Its number goes
            // to that file, and so do its markers.
            file.cancelWriting()
            keepMarkers(of: file)
            fileCount -= 1
            pendingAudio = []
            current = nil
            betweenFiles = true
        } else if startsNewFileOnResume {
            // The event ended: its file is finished now, not when the next event begins.
            beginCut(file, at: time)
            current = nil
            betweenFiles = true
            finishDrainedFiles(force: false)
        }
    }

    /// Resumes at `time` (a keyframe with shared video): in the file open,
    /// or a new one when none is, with what the pre-roll kept written first,
    /// so the resumed stretch begins at the pre-roll's keyframe and runs on
    /// without a gap into the samples from `time` on.
    func resume(at time: MediaTime) {
        guard paused else { return }
        guard let file = current ?? openNextFile(at: time) else { return }
        paused = false
        betweenFiles = false
        let kept = preRoll?.take(before: time)
        // Up to the resume frame (written next), a segment that falls due
        // waits for a keyframe: the pre-roll's encoder was not asked for one there.
        keyframeCutsUntil = kept == nil ? nil : time
        let start = kept.map { max($0.start, file.latestEnd ?? $0.start) } ?? max(time, file.latestEnd ?? time)
        lock.withLock {
            stats.isPaused = false
            stats.lastPreRoll = time > start ? time - start : .zero
        }
        startSession(file, at: start)
        // Audio captured from the resume on that was handled while still paused goes in too.
        let waited = pausedAudio
        pausedAudio = []
        for (index, audio) in waited where audio.presentationTime + audio.duration > start {
            append(.audio(audio), from: index, to: file)
        }
        let cause = takeResumeCause()
        delegateCall { $1.fileOutput($0, didResumeRecordingTo: file.path, cause: cause) }
        // The kept samples count against the limits as any other: a
        // duration or size reached inside the pre-roll stops it there.
        for (index, sample) in kept?.samples ?? [] {
            write(sample, from: index, isLead: !hasVideo || sample.mediaType == .video)
            if ended || current == nil { return }
        }
    }

    /// Keeps a copy of `audio`, handled while paused, for the resume. A
    /// resume takes effect at a frame, and on a machine that stalled, the
    /// frames captured meanwhile come in a burst after the audio of the same
    /// moments was handled (as paused): a resume at one of those frames
    /// would leave that audio out and a gap in its place. The last 3 s are kept.
    func keepPausedAudio(_ audio: AudioSampleBuffer, index: Int) {
        pausedAudio.append((index, audio.copied()))
        let limit = audio.presentationTime - MediaTime(value: 3, timescale: 1)
        if let first = pausedAudio.firstIndex(where: { $0.1.presentationTime >= limit }), first > 0 {
            pausedAudio.removeFirst(first)
        }
    }

    /// Where a recording that begins paused checks its settings and folder:
    /// a scratch file beside the first file, made and removed at once, so
    /// that what would fail at the first resume fails at the start instead
    /// while the first file itself is left alone (an existing one is not
    /// replaced before a resume). It fails as the first file would if that
    /// exists and may not be replaced.
    func armedCheckPath() throws(RecordingError) -> String {
        let path = files.path(number: 1)
        if !files.overwritesExistingFiles, (try? Posix.lstat(path)) != nil { throw .outputExists(path: path) }
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return folder + ".capctl-check-\(getpid())-" + name
    }

    /// The recording begins paused (a pause was asked for before it
    /// began): no file is made until the first resume.
    func beginArmed() {
        let path = files.path(number: 1)
        let cameras = inputs.filter { $0.mediaType == .video && recordedMediaTypes.contains(.video) }.count
        let paths = files.filePerCamera ? (1...max(1, cameras)).map { files.path(number: 1, camera: $0) } : [path]
        lock.withLock { (currentPath, currentPaths) = (path, paths) }
        fileCount = -1
        paused = true
        betweenFiles = true
        lock.withLock { stats.isPaused = true }
        preRoll?.arm(from: MonotonicClock.now())
        let cause = takePauseCause()
        delegateCall { $1.fileOutput($0, didPauseRecordingTo: path, cause: cause) }
    }

    /// Requests while no file is open (see `betweenFiles`).
    func applyBetweenFiles(_ command: Command, at time: MediaTime) {
        guard betweenFiles else { return }
        switch command {
        case .pause: break
        case .resume: resume(at: time)
        case .switchFile(let path): nextPath = path ?? nextPath
        case .stop(let reason, let error), .stopWhenDrained(let reason, let error): stopBetweenFiles(reason: reason, error: error)
        }
    }

    /// Ends a recording that has no file open: once the files still
    /// draining are finished.
    func stopBetweenFiles(reason: RecordingStopReason, error: RecordingError?) {
        guard betweenFiles else { return }
        betweenFiles = false
        stopping = (reason, error)
        lock.withLock { ending = true }
        finishDrainedFiles(force: false)
    }

    /// Opens the file a resume writes into when none is open; one that
    /// cannot be made ends the recording with the error.
    func openNextFile(at time: MediaTime) -> RecordingFileWriter? {
        guard betweenFiles else { return nil }
        do {
            let next = try files.open(number: fileCount + 2, path: nextPath, inputs: inputs, sharedVideo: sharedVideo, leavingOut: endedInputs)
            fileCount += 1
            nextPath = nil
            current = next
            lock.withLock { (currentPath, currentPaths) = (next.path, next.parts.map(\.path)) }
            return next
        } catch {
            reportUnmade(path: error.path ?? nextPath ?? files.path(number: fileCount + 2), index: fileCount + 2, error: error)
            stopBetweenFiles(reason: .error, error: error)
            return nil
        }
    }
}
