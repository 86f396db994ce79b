#if canImport(Glibc)
import Glibc
#endif

/// The writing thread's handling of each sample: where a recording starts
/// (keyframes), which samples a file takes, and appending them.
extension FileRecording {
    func settleKeyframeRules(_ file: RecordingFileWriter) {
        startsAtKeyframe = false
        cutsAtKeyframes = false
        for (index, input) in inputs.enumerated() where input.mediaType == .video && recordedMediaTypes.contains(.video) {
            // Shared encoders make keyframes where they are asked for: at
            // a segment's end, set in advance; requests wait for theirs.
            if sharedVideo[index] != nil {
                startsAtKeyframe = true
                continue
            }
            guard case .compressed(let codec)? = input.videoFormat?.layout, AccessUnit.Codec(codecName: codec) != nil else { continue }
            startsAtKeyframe = true
            if index < file.writerInputs.count, file.writerInputs[index]?.takesCompressedSamples == true { cutsAtKeyframes = true }
        }
    }

    func process(_ sample: SampleBuffer, from index: Int) {
        let input = inputs[index]
        let time = sample.presentationTime
        let isLead = hasVideo ? sample.mediaType == .video : true
        let keyframe = isKeyframe(sample)
        if latestSourceTime.map({ time > $0 }) ?? true { latestSourceTime = time }

        // With several cameras, requests take effect at the newest frame so
        // far. One camera's frame can come after another's later frames
        // were handled: a stop or pause there would leave those frames
        // written past the cut (in the file, never shown), and a resume
        // there would have left them out as paused. (One camera's frames
        // come in capture order, or, from an encoder with B-frames, in
        // decoding order, where requests keep taking effect at the next.)
        // A camera stamping far ahead of the others (a file played faster
        // than real time) must not hold requests up for good: after a few
        // frames that are not the newest, the next takes them.
        let isNewest = latestLeadTime.map { time > $0 } ?? true
        if isLead { leadSamplesSinceNewest = isNewest ? 0 : leadSamplesSinceNewest + 1 }
        if isLead, !severalCameras || isNewest || leadSamplesSinceNewest > 8 {
            if isNewest { latestLeadTime = time }
            for command in takeCommands(atKeyframe: keyframe) { apply(command, at: time) }
            if ended { return }
        }
        // While paused, the audio left out is kept for a pre-roll (the video comes from the encoder).
        if paused, let ring = preRoll {
            switch sample {
            case .audio(let audio): ring.keep(audio, index: index)
            // How far the writing has come: the ring keeps its duration behind this frame, not behind the encoder's newest.
            case .video(let video): ring.passed(videoAt: video.presentationTime)
            }
        } else if paused, case .audio(let audio) = sample {
            keepPausedAudio(audio, index: index)
        }
        immediateSwitch = nil
        sampleHandler?(sample, input)
        if let request = immediateSwitch {
            immediateSwitch = nil
            if sharedVideo.isEmpty || keyframe {
                apply(.switchFile(request), at: time)
            } else {
                // A shared encoder's next file begins at the keyframe it makes for the switch.
                lock.withLock { commands.append(.switchFile(request)) }
            }
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
                    // Several cameras: the file starts at the earliest of their first frames.
                    guard let first = firstFrames(adding: sample, from: index) else { return }
                    markAudioLostAtTheStart(of: file)
                    startSession(file, at: first.start)
                    for (heldIndex, held) in first.held { append(held, from: heldIndex, to: file) }
                } else {
                    pendingAudio.append((index, sample))
                    if pendingAudio.count > 200 { pendingAudio.removeFirst() }
                    return
                }
            }
        }
        write(sample, from: index, isLead: isLead)
        if ended { return }
        publishStatistics()
        if queue?.isEmpty == true { applyDrainedStops() }
    }

    /// Checks the limits at `sample`, then writes it into the files it
    /// belongs to: a draining file takes what came before its cut, the
    /// current file the rest (and the audio that waited for its first frame).
    func write(_ sample: SampleBuffer, from index: Int, isLead: Bool) {
        if let file = current {
            // Audio in a movie checks only the limits whose cut time is known
            // ahead (duration, segment duration): video frames arriving late,
            // or far apart, must not let audio run past them.
            checkLimits(file, at: sample.presentationTime, sample: sample, timedOnly: !isLead)
            if ended { return }
        }
        let time = sample.presentationTime
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
    }

    /// Audio missing at the first file's start was lost on its way (a stalled
    /// process), not begun late, when the microphone delivered before the
    /// first frame: it is silence there, counted, as after a cut (`switchFile`).
    /// A microphone that simply opened after the camera starts where its audio does.
    func markAudioLostAtTheStart(of file: RecordingFileWriter) {
        for index in Set(pendingAudio.map(\.0)) {
            for part in file.parts { part.writerInputs[index]?.fillsAudioFromSessionStart = true }
        }
    }

    /// Before a file's first sample of audio input `index`: audio lost on its way
    /// since shortly before the file began (a full queue, a microphone's overrun,
    /// logged by the time this sample comes) means the audio missing at the file's
    /// start was lost, not begun late: it is silence there, counted.
    func markAudioLost(before sample: SampleBuffer, from index: Int, in file: RecordingFileWriter) {
        guard sample.mediaType == .audio, !file.audioStartsSettled.contains(index), let start = file.firstSessionStart else { return }
        file.audioStartsSettled.insert(index)
        let around = start - MediaTime(value: 2, timescale: 1)
        let queueLost = queueLosses.audio.lost(from: around, before: sample.presentationTime) > 0
        let deviceLost = (inputs[index].source.lossLog?.lost(from: around, before: sample.presentationTime) ?? 0) > 0
        guard queueLost || deviceLost else { return }
        for part in file.parts { part.writerInputs[index]?.fillsAudioFromSessionStart = true }
    }

    func sampleEnd(_ sample: SampleBuffer) -> MediaTime {
        switch sample {
        case .video(let video): return video.presentationTime
        case .audio(let audio): return audio.presentationTime + audio.duration
        }
    }

    func startSession(_ file: RecordingFileWriter, at time: MediaTime) {
        do {
            try file.startSession(atSourceTime: time)
            file.sessionStart = time
            if file.firstSessionStart == nil { file.firstSessionStart = time }
            lock.withLock { recordedLosses.open(at: time) }
            file.lastSession = (time, nil)
            // A shared encoder makes a keyframe where the segment will end.
            if limits.segmentDuration.isNumeric {
                encoders?.requestKeyframe(at: time + (limits.segmentDuration.nanoseconds - file.closedDuration)
                                              - RecordingLimits.frameCutTolerance)
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
    func append(_ sample: SampleBuffer, from index: Int, to file: RecordingFileWriter) {
        markAudioLost(before: sample, from: index, in: file)
        do throws(WriterError) {
            let lost = try file.append(sample, input: index)
            if lost.beforeKeyframe > 0 || lost.refused > 0 {
                lock.withLock {
                    stats.droppedBeforeKeyframe += lost.beforeKeyframe
                    stats.droppedByWriter += lost.refused
                    if sample.mediaType == .audio { stats.droppedAudioSamples += lost.refused }
                }
            }
        } catch {
            fail(RecordingFileFactory.writeError(file.writerError ?? error, path: file.path), file: file)
        }
    }
}
