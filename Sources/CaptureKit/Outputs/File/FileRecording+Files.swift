#if canImport(Glibc)
import Glibc
#endif

/// A recording's requests taking effect, its files cut, drained and
/// finished, its limits and what it reports (writing thread only).
extension FileRecording {
    // MARK: Requests

    func apply(_ command: Command, at time: MediaTime) {
        guard let file = current else { return applyBetweenFiles(command, at: time) }
        switch command {
        case .pause:
            pause(file, at: time)
        case .resume:
            resume(at: time)
        case .switchFile(let path):
            switchFile(from: file, at: time, to: path)
        case .stop(let reason, let error), .stopWhenDrained(let reason, let error):
            stop(file, at: time, reason: reason, error: error)
        }
    }

    func switchFile(from file: RecordingFileWriter, at time: MediaTime, to path: String?) {
        let next: RecordingFileWriter
        do {
            next = try files.open(number: fileCount + 2, path: path, inputs: inputs, sharedVideo: sharedVideo, leavingOut: endedInputs)
            lock.withLock { (currentPath, currentPaths) = (next.path, next.parts.map(\.path)) }
        } catch {
            // The file that could not be made is reported as finished with
            // the error; the one before it ends complete, and so does the recording.
            reportUnmade(path: error.path ?? path ?? files.path(number: fileCount + 2), index: fileCount + 2, error: error)
            stop(file, at: time, reason: .error, error: error)
            return
        }
        fileCount += 1
        // The microphones ran on across the cut: audio that is missing at
        // the next file's start was lost on its way (a stalled process), and
        // is silence there, as a gap inside a file is.
        for part in next.parts {
            for (index, input) in part.writerInputs where input.mediaType == .audio && !endedInputs.contains(index) {
                input.fillsAudioFromSessionStart = true
            }
        }
        let wasPaused = file.sessionStart == nil && paused
        beginCut(file, at: time)
        current = next
        if !wasPaused { startSession(next, at: time) }
    }

    /// Ends `file`'s session at `time` and sets it draining: samples before
    /// the cut that are still on their way are written, then it is finished.
    func beginCut(_ file: RecordingFileWriter, at time: MediaTime) {
        if let start = file.sessionStart {
            let end = max(time, start)
            try? file.endSession(atSourceTime: end)
            file.closedDuration = file.closedDuration + (end - start)
            file.sessionStart = nil
            file.lastSession?.end = end
            lock.withLock { recordedLosses.close(at: end) }
        }
        lock.withLock { recordedLosses.close(at: time) }
        file.cutTime = time
        file.cutRequestedAt = MonotonicClock.nowNanoseconds()
        file.awaiting = Set(inputs.indices.filter { file.writerInputs.indices.contains($0) && file.writerInputs[$0] != nil }).subtracting(endedInputs)
        draining.append(file)
        closedDuration = closedDuration + file.closedDuration
        delegateCall { $1.fileOutput($0, willFinishRecordingTo: file.path, error: file.endError) }
    }

    func stop(_ file: RecordingFileWriter, at time: MediaTime, reason: RecordingStopReason, error: RecordingError?) {
        stopping = (reason, error)
        lock.withLock { ending = true }
        // A limit or a lost device ends the recording with this file, which
        // is complete: its didFinishRecordingTo says why (as AVFoundation's
        // does, with "successfully finished"). Other errors concern another
        // file (the next one that could not be made) or come with this
        // file's own finishing.
        if let error, error.recordingSuccessfullyFinished { file.endError = error }
        beginCut(file, at: time)
        current = nil
        finishDrainedFiles(force: false)
        if draining.isEmpty { endRecording(reason: reason, error: error) }
    }

    /// Where the tracks all have samples up to: the earliest of their latest ends.
    func lastCommonEnd(_ file: RecordingFileWriter) -> MediaTime {
        file.latestEnd ?? latestSourceTime ?? MonotonicClock.now()
    }

    /// Finishes draining files whose inputs have all passed the cut (or,
    /// with `force` or after 2 s, whatever they have).
    func finishDrainedFiles(force: Bool) {
        let now = MonotonicClock.nowNanoseconds()
        let ready = draining.filter { force || $0.awaiting.isEmpty || now - $0.cutRequestedAt > 2_000_000_000 }
        // Out of the draining list first: a file being finished counts once,
        // in the totals of the files done (see `publishStatistics`).
        draining.removeAll { file in ready.contains { $0 === file } }
        for file in ready { finish(file) }
        if draining.isEmpty, current == nil, let stopping, !ended {
            endRecording(reason: stopping.reason, error: stopping.error)
        }
    }

    func finish(_ file: RecordingFileWriter) {
        settleMarkers(before: file)
        if paused || current != nil, file.isWriting, file.latestEnd == nil || hasVideo && file.videoFrames == 0 {
            // No picture in it and the recording goes on: paused (switched to
            // while paused, or resumed and paused again at one frame), or
            // switched away from before its first frame arrived (a switch asked
            // for as the recording began: at most some audio from before that
            // frame, which a recording's first file leaves out too). No file is
            // left behind and its samples count nowhere: a file without a
            // picture cannot be finished, and its error would end a recording
            // that goes on in the next file.
            file.cancelWriting()
            return
        }
        for part in file.parts where !part.isFinished { finish(part, of: file) }
        if file.parts.allSatisfy(\.wasRemoved) { removedDuration = removedDuration + file.closedDuration }
        publishStatistics()
        applyRetention()
    }

    /// Finalizes one file of `file` and reports it.
    func finish(_ part: RecordingFilePart, of file: RecordingFileWriter) {
        part.isFinished = true
        var error: RecordingError?
        let held = part.writerInputs.values.filter { $0.mediaType == .video }
        let before = held.reduce((written: 0, skipped: 0)) { ($0.written + $1.writtenFrameCount, $0.skipped + $1.framesSkippedBeforeKeyframe) }
        let microphones = part.writerInputs.values.filter { $0.mediaType == .audio }
        let audioBefore = RecordingFileWriter.audioCounts(microphones)
        if part.writer.status == .writing {
            do { try part.writer.finishWriting() } catch let failure { error = RecordingFileFactory.writeError(failure, path: part.path) }
        } else if let failure = part.writer.error {
            error = RecordingFileFactory.writeError(failure, path: part.path)
        }
        // Pictures a decoder held until the end are in the file too.
        let after = held.reduce((written: 0, skipped: 0)) { ($0.written + $1.writtenFrameCount, $0.skipped + $1.framesSkippedBeforeKeyframe) }
        let late = max(0, after.written - before.written)
        part.videoFrames += late
        // Silence that filled a tail of audio lost before the cut is in the file too.
        file.countAudio(since: audioBefore, of: microphones, in: part)
        file.videoFrames += late
        if after.skipped > before.skipped { lock.withLock { stats.droppedBeforeKeyframe += after.skipped - before.skipped } }
        // With a file per camera, each counts its own camera's frames: one
        // whose camera sent none in it has no picture, which is no error.
        let taken = file.parts.count == 1 ? file.videoSamplesTaken : part.videoSamplesTaken
        if error == nil, part.videoFrames == 0, taken > 0, !held.isEmpty {
            // Frames were captured for this file and none could be written.
            let skipped = after.skipped
            let reason = skipped > 0 ? "no keyframe arrived to start decoding at; \(skipped) frames came before one and were dropped"
                                     : "the writer could use none of its \(taken) frames"
            error = .nothingWritten(path: part.path, reason: reason)
        }
        // A limit or a lost camera ended the recording with this file (a
        // file with nothing decodable in it says that instead).
        if error == nil { error = file.endError }
        if case .nothingWritten? = error, !Posix.isAccessible(part.path) {
            // The writer removed a file with nothing decodable in it.
            file.videoFrames -= part.videoFrames
            file.audioSamples -= part.audioSamples
            file.silenceSamples -= part.silenceSamples
            part.videoFrames = 0
            part.audioSamples = 0
            part.silenceSamples = 0
            part.wasRemoved = true
        }
        if stoppedBeforeMedia(file, error: error, skippedBeforeKeyframe: after.skipped) {
            return reportNoDataCaptured(part, index: file.index)
        }
        let bytes = RecordingFileWriter.size(of: part.path)
        closedBytes += bytes
        // A part finished ahead of the others (its camera went away) ends where its camera's media did.
        // A removed file holds no time (its didFinishRecordingTo says so, with the error that says why).
        let duration = part.wasRemoved ? .zero : part.endDuration ?? file.closedDuration
        var record = RecordedFile(path: part.path, index: file.index, duration: duration, bytes: bytes,
                                  videoFrames: part.videoFrames, audioSamples: part.audioSamples,
                                  isComplete: error?.recordingSuccessfullyFinished ?? true)
        record.silenceInsertedSamples = part.silenceSamples
        record.firstCaptureTime = part.videoFrames + part.audioSamples > 0 ? file.firstSessionStart : nil
        record.markers = file.markers(within: duration)
        closedVideoFrames += part.videoFrames
        closedAudioSamples += part.audioSamples
        closedSilenceSamples += part.silenceSamples
        file.videoFrames -= part.videoFrames
        file.audioSamples -= part.audioSamples
        file.silenceSamples -= part.silenceSamples
        if !part.wasRemoved {
            lock.withLock {
                stats.files.append(part.path)
                stats.fileCount += 1
            }
            retain(part.path)
        }
        if let error, !error.recordingSuccessfullyFinished, stopping == nil || stopping?.error == nil {
            stopping = (.error, error)
            lock.withLock { ending = true }
        }
        delegateCall { $1.fileOutput($0, didFinishRecordingTo: record, error: error) }
    }

    /// Whether `file` ends with no media in any of its parts because the
    /// recording was stopped (asked to, or at a limit) before any reached
    /// it: a stop 70 ms after the start, before an encoder's first
    /// keyframe. Not when frames were handed to it and none could be
    /// written (a camera that never sent a keyframe, damaged frames), nor
    /// when the recording failed, nor for a file a segment cut ended (a
    /// slow camera's file of one segment holds no picture, and is kept).
    func stoppedBeforeMedia(_ file: RecordingFileWriter, error: RecordingError?, skippedBeforeKeyframe: Int) -> Bool {
        guard let stopping, stopping.reason != .error, skippedBeforeKeyframe == 0, file.videoSamplesTaken == 0,
              file.parts.allSatisfy({ $0.videoFrames == 0 && $0.audioSamples == 0 && $0.videoSamplesTaken == 0 }) else { return false }
        // Frames that came and were lost (refused by an encoder, damaged) are media that came.
        guard statistics.dropped == 0 else { return false }
        switch error {
        case nil, .nothingWritten?, .limitReached?: return true
        default: return false
        }
    }

    /// A file the recording was stopped before: it is removed (a writer
    /// that finished it empty left a header), listed nowhere, and reported
    /// with AVFoundation's "no data captured".
    func reportNoDataCaptured(_ part: RecordingFilePart, index: Int) {
        if Posix.isAccessible(part.path) { try? Posix.unlink(part.path) }
        reportUnmade(path: part.path, index: index, error: .noDataCaptured(path: part.path))
    }

    /// Reports a file that could not be made (its folder missing, a file in
    /// the way) as finished with the error, so that every file a recording
    /// was asked to write reaches `didFinishRecordingTo` once.
    func reportUnmade(path: String, index: Int, error: RecordingError) {
        let record = RecordedFile(path: path, index: index, duration: .zero, bytes: 0, videoFrames: 0, audioSamples: 0, isComplete: false,
                                  wasCreated: false)
        delegateCall { $1.fileOutput($0, didFinishRecordingTo: record, error: error) }
    }

    func fail(_ error: RecordingError, file: RecordingFileWriter) {
        guard stopping == nil || stopping?.reason != .error else { return }
        stopping = (.error, error)
        lock.withLock { ending = true }
        if current === file {
            current = nil
            // Cut where its samples end, so that its duration is counted.
            beginCut(file, at: file.latestEnd ?? latestSourceTime ?? MonotonicClock.now())
        }
        finishDrainedFiles(force: true)
    }

    func endRecording(reason: RecordingStopReason, error: RecordingError?) {
        guard !ended else { return }
        ended = true
        // Losses no longer count: a first sample that comes now opens no stretch.
        lock.withLock { opensLossesAtFirstSample = false }
        queue?.close()
        encoders?.leaveAll()
        preRoll?.leaveAll()
        publishStatistics()
        endRecordingReported(reason: reason, error: error)
    }

    func endRecordingReported(reason: RecordingStopReason, error: RecordingError?) {
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
    func checkLimits(_ file: RecordingFileWriter, at time: MediaTime, sample: SampleBuffer, timedOnly: Bool) {
        if let until = keyframeCutsUntil, time > until { keyframeCutsUntil = nil }
        switch limits.decision(for: file, sample: sample, at: time, timedOnly: timedOnly,
                               closedDuration: closedDuration, closedBytes: closedBytes, timedCutsAtKeyframes: cutsAtKeyframes || keyframeCutsUntil != nil,
                               sizeCutsAtKeyframes: cutsAtKeyframes || !sharedVideo.isEmpty) {
        case .none: break
        case .stop(let cut, let reason): stop(file, at: cut, reason: reason, error: .limitReached(reason))
        case .switchFile(let cut): switchFile(from: file, at: cut, to: nil)
        case .reclaimSpace(let bytes, let cut):
            // Only the files being written left: the floor stops the recording after all.
            if !reclaimSpace(bytes) { stop(file, at: cut, reason: .minFreeSpace, error: .limitReached(.minFreeSpace)) }
        case .keyframeNeeded:
            // Once per file: the stage's next picture is the keyframe.
            if !file.askedForKeyframe {
                file.askedForKeyframe = true
                encoders?.requestKeyframe()
            }
        }
    }

    func isKeyframe(_ sample: SampleBuffer) -> Bool {
        if case .video(let video) = sample { return video.isKeyframe }
        return false
    }

    // MARK: Reporting

    func publishStatistics() {
        // Runs for every sample: sums in place rather than building an array of the open files.
        let duration = closedDuration - removedDuration + (current.map { $0.duration(upTo: nil) } ?? .zero)
        var bytes = closedBytes, frames = 0, samples = 0, silence = 0
        func add(_ file: RecordingFileWriter) {
            bytes += file.bytesWritten
            frames += file.videoFrames
            samples += file.audioSamples
            silence += file.silenceSamples
        }
        for file in draining { add(file) }
        if let current { add(current) }
        let anchor = currentMarkerAnchor(total: duration)
        var arrived: [RecordingMarker] = []
        lock.withLock {
            stats.duration = duration
            stats.bytes = bytes
            stats.videoFrames = closedVideoFrames + frames
            stats.audioSamples = closedAudioSamples + samples
            stats.silenceInsertedSamples = closedSilenceSamples + silence
            if let current, current.sessionStart != nil || current.closedDuration > .zero { stats.fileNumber = current.index }
            markerAnchor = anchor
            if !pendingMarkers.isEmpty { swap(&arrived, &pendingMarkers) }
        }
        if !arrived.isEmpty || !waitingMarkers.isEmpty { deliverMarkers(arrived) }
    }

    func delegateCall(_ body: (CaptureFileOutput, any CaptureFileOutputRecordingDelegate) -> Void) {
        guard let output, let delegate = lock.withLock({ strongDelegate }) else { return }
        body(output, delegate)
    }
}
