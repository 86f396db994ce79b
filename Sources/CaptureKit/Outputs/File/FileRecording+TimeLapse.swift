/// What a time-lapse needs of a recording's inputs, checked as it begins
/// (the frames themselves are picked in `TimeLapseFrames`, on the capture
/// threads, before they reach the queue).
extension FileRecording {
    /// Refuses a time-lapse the inputs cannot give: no camera, a camera
    /// whose frames depend on one another (H.264, HEVC: frames cannot be
    /// left out before decoding), a pre-roll (kept from a live encoder of
    /// every frame), or an interval shorter than the camera's frame interval.
    func checkTimeLapse(_ accepted: [CaptureInput]) throws(RecordingError) {
        guard let timeLapse = timeLapseFrames?.timeLapse else { return }
        if let problem = timeLapse.problem { throw .unsupported(problem) }
        let cameras = accepted.filter { $0.mediaType == .video }
        guard !cameras.isEmpty else {
            throw .unsupported("a time-lapse is made of a camera's pictures, and this recording has no camera; record to a movie (.mp4, .mov, .mkv, .webm, .ts) with a camera")
        }
        if preRollDuration != nil {
            throw .unsupported("a time-lapse keeps one frame an interval; a pre-roll keeps every frame from a live encoder: record one or the other")
        }
        for camera in cameras {
            guard let format = camera.videoFormat else { continue }
            if case .compressed(let codec) = format.layout, codec != "mjpeg" {
                throw .unsupported("\(camera.source.path) sends \(codec), whose frames depend on one another, so a time-lapse cannot leave frames out; ask the camera for a raw or MJPEG format (--pixel-format)")
            }
            if let frame = format.frameDuration, frame.isNumeric, frame > .zero, timeLapse.interval < frame {
                throw .unsupported("a time-lapse interval of \(timeLapse.interval.seconds) s is shorter than \(camera.source.path)'s frame interval (\(frame.seconds) s); use an interval of at least one frame")
            }
        }
    }
}
