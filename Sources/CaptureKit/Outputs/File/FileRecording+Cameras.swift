/// Several cameras in one recording: what they may not share, and a camera
/// that goes away while the others record on.
///
/// Every camera is a track of its own on the session's one clock: a file
/// begins at the first frame of any camera, and each camera's frames keep
/// their capture time in it (a camera that starts later begins with an
/// empty edit). Requests and cuts take effect at the next frame of any
/// camera, and every camera's frames are split at that same time.
extension FileRecording {
    /// The positions of the cameras this recording writes.
    func cameraPositions(_ allInputs: [CaptureInput]) -> [Int] {
        guard recordedMediaTypes.contains(.video) else { return [] }
        return allInputs.indices.filter { allInputs[$0].mediaType == .video }
    }

    /// Whether the cameras may take their frames from shared encoders:
    /// with one camera only. A shared encoder's file begins at the keyframe
    /// it makes for the cut, and two encoders never make theirs at the same
    /// frame time; with an encoder per file, each camera's file begins
    /// exactly at the cut.
    func sharesCameraEncoders(_ allInputs: [CaptureInput]) -> Bool {
        cameraPositions(allInputs).count <= 1
    }

    /// Before the first file starts: with several cameras, their first
    /// frames are held until each camera has sent one (or one has sent
    /// three: a camera that is slow to start does not hold the others up
    /// for long, nor their buffers), so that the file starts at the
    /// earliest of them rather than at whichever reached the writing thread
    /// first, which would leave out another's earlier frames. Answers the
    /// start and the frames held before `sample` once it can start; nil
    /// while holding (then `sample` is held).
    func firstFrames(adding sample: SampleBuffer, from index: Int) -> (start: MediaTime, held: [(Int, SampleBuffer)])? {
        let cameras = cameraPositions(inputs).filter { !endedInputs.contains($0) }
        let held = heldFirstFrames
        let seen = Set(held.map(\.0) + [index])
        let mostFromOne = cameras.map { camera in held.filter { $0.0 == camera }.count + (camera == index ? 1 : 0) }.max() ?? 0
        guard cameras.count > 1, !cameras.allSatisfy(seen.contains), mostFromOne < 3 else {
            heldFirstFrames = []
            let start = (held.map(\.1.presentationTime) + [sample.presentationTime]).min() ?? sample.presentationTime
            return (start, held.sorted { $0.1.presentationTime < $1.1.presentationTime })
        }
        heldFirstFrames.append((index, sample))
        return nil
    }

    /// Refuses what several cameras cannot do together: a pre-roll (kept as
    /// a shared encoder compresses, see `sharesCameraEncoders`), and H.264
    /// or HEVC copied from the cameras (each could begin a file only at its
    /// own keyframes, never at one time for all).
    func checkCameras(_ allInputs: [CaptureInput]) throws(RecordingError) {
        let cameras = cameraPositions(allInputs).map { allInputs[$0] }
        guard cameras.count > 1 else { return }
        if preRollDuration != nil {
            throw .unsupported("a pre-roll keeps one camera's video; this recording has \(cameras.count) cameras")
        }
        guard files.settings.video == .passthrough else { return }
        for camera in cameras {
            if case .compressed(let codec)? = camera.videoFormat?.layout, AccessUnit.Codec(codecName: codec) != nil {
                throw .unsupported("\(camera.source.path): its \(codec) can only be cut at its own keyframes, never at one time with the other cameras; encode it instead of copying")
            }
        }
    }

    /// From a capture thread: input `index` ended. A camera lost while
    /// another still captures leaves the recording going on without it
    /// (unless `stopsOnDeviceLoss`): its track ends with its last frame and
    /// the delegate hears of it. Answers whether that is so; otherwise the
    /// end ends the recording as any input's end does.
    func continuesWithout(_ index: Int, after end: CaptureEnd) -> Bool {
        guard inputs[index].mediaType == .video, recordedMediaTypes.contains(.video) else { return false }
        let cameras = cameraPositions(inputs)
        return lock.withLock { () -> Bool in
            endedCameras.insert(index)
            guard case .deviceLost(let device) = end, !stopsOnDeviceLoss,
                  cameras.contains(where: { !endedCameras.contains($0) }) else { return false }
            endedInputsPending.insert(index)
            lostCameras.append((index, .deviceLost(device)))
            return true
        }
    }

    /// Tells the delegate of cameras lost since last asked (writing thread);
    /// `unhandled` samples were taken from the queue and not handled yet.
    func reportLostCameras(unhandled: Int) {
        let lost = lock.withLock { () -> [(Int, RecordingError)] in
            defer { lostCameras = [] }
            return lostCameras
        }
        for (index, error) in lost {
            let input = inputs[index]
            delegateCall { $1.fileOutput($0, didLose: input, error: error) }
            // Its capture loop has ended: every frame it took is queued by now.
            let after = samplesHandled + unhandled + (queue?.queuedCount ?? 0)
            if files.filePerCamera { lostCamerasToFinish.append((index, after)) }
        }
    }

    /// Finishes the files of lost cameras whose frames have all been written
    /// (the samples queued when the loss was heard of are handled).
    func finishLostCameraFiles() {
        let ready = lostCamerasToFinish.filter { $0.after <= samplesHandled }
        guard !ready.isEmpty else { return }
        lostCamerasToFinish.removeAll { $0.after <= samplesHandled }
        for (camera, _) in ready {
            for file in draining + [current].compactMap({ $0 }) { finishCameraFile(of: camera, in: file) }
        }
    }

    /// With one file per camera, a camera that went away has its file
    /// finished where its last frame ends; the other files go on. A file
    /// it put no frame into is removed.
    func finishCameraFile(of camera: Int, in file: RecordingFileWriter) {
        guard let part = file.parts.first(where: { $0.camera == camera && !$0.isFinished }), file.parts.count > 1 else { return }
        guard part.videoFrames > 0 else {
            part.isFinished = true
            part.writer.cancelWriting()
            return
        }
        let end = file.cameraEnds[camera]
        if let start = file.sessionStart, let end {
            let cut = max(start, min(end, file.cutTime ?? end))
            try? part.writer.endSession(atSourceTime: cut)
            part.endDuration = file.closedDuration + (cut - start)
        } else {
            part.endDuration = file.closedDuration
        }
        finish(part, of: file)
        publishStatistics()
    }
}
