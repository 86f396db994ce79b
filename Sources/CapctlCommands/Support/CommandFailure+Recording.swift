import CaptureKit

extension CommandFailure {
    /// The status and message for a capture error.
    package init(_ error: CaptureError) {
        switch error {
        case .device(let device): self.init(device)
        case .unsupported: self.init(error.description, status: .usage)
        case .io: self.init(error.description, status: .ioError)
        case .deviceLost: self.init(error.description, status: .unavailable)
        case .source: self.init(error.description, status: .dataError)
        case .configurationLocked(let device, let holder):
            self.init("\(device): locked for configuration by \(holder); try again when it ends, or record with --no-lock", status: .unavailable)
        case .sameCameraTwice(let device, let uniqueID):
            self.init("--video names \(device) (\(uniqueID)) twice; give each camera once", status: .usage)
        case .processorCannotTake(let device, let fourcc):
            self.init("\(device) delivers \(fourcc) frames, which the overlay can neither draw into nor decode; ask the camera for another format ('capctl formats \(device)' lists them, such as --video \(device),pixel-format=YUYV or MJPG) or leave out the overlay",
                      status: .usage)
        case .noBandwidth(let device):
            self.init("\(error.description); try a smaller size or rate for it (--video \(device),size=640x480,fps=15), MJPEG (--video \(device),pixel-format=MJPG), or another USB port",
                      status: .unavailable)
        }
    }

    /// The status and message for a recording error.
    init(_ error: RecordingError) {
        switch error {
        case .limitReached: self.init(error.description, status: .success)
        case .cannotCreate: self.init(error.description, status: .cannotCreate)
        case .outputExists(let path): self.init("\(path): already exists; capctl never overwrites a file (use --overwrite to replace it)", status: .cannotCreate)
        case .unsupported: self.init(error.description, status: .usage)
        case .containerCannotHold(_, _, let mediaType):
            self.init("\(error.description); choose another --\(mediaType == .video ? "video" : "audio")-codec or container", status: .usage)
        case .copyNeedsCompressedFrames(let pixelFormat):
            self.init("--video-codec copy needs a camera that delivers compressed frames (MJPEG, H.264); this one delivers raw \(pixelFormat) frames", status: .usage)
        case .diskFull, .writeFailed: self.init(error.description, status: .ioError)
        case .nothingWritten: self.init(error.description, status: .dataError)
        case .noDataCaptured: self.init(error.description, status: .success)
        case .deviceLost: self.init(error.description, status: .unavailable)
        case .capture(let capture): self.init(capture)
        case .motionNeedsCamera: self.init("--resume-on motion watches a camera's picture; add --video DEVICE", status: .usage)
        case .silenceNeedsMicrophone: self.init("--silence-timeout listens to microphones; add --audio DEVICE (such as --audio default)", status: .usage)
        case .motionCannotRead(let device, let sends):
            self.init("\(device): --resume-on motion reads 8-bit luma from raw pictures and this camera sends \(sends); choose a --pixel-format such as YUYV",
                      status: .usage)
        }
    }

    /// The status and message for a recording that could not start.
    package init(_ error: CaptureRecorderError) {
        switch error {
        case .recording(let error): self.init(error)
        case .streamRefused(_, let error):
            switch error {
            // The system could not start the stream (a thread, a write): not the user's settings.
            case .invalidState, .stream, .io: self.init(error.description, status: .unavailable)
            default: self.init(error.description, status: .usage)
            }
        case .capture(let error): self.init(error)
        }
    }
}
