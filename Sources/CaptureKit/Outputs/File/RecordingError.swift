/// Why a recording ended, as progress events and summaries name it.
public enum RecordingStopReason: String, Sendable, Hashable, Codable {
    /// `stopRecording()` (the user stopped it).
    case stopped
    case maxDuration = "max-duration"
    case maxSize = "max-size"
    case minFreeSpace = "min-free-space"
    /// A capture device went away.
    case deviceDisconnected = "device-disconnected"
    /// A source with an end (a file played as a camera) reached it.
    case endOfInput = "end-of-input"
    /// Writing or capture failed.
    case error
}

/// What went wrong with a recording, like the NSError AVFoundation hands a
/// recording delegate: each case says whether the file is nonetheless
/// complete and playable (AVErrorRecordingSuccessfullyFinishedKey).
public enum RecordingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The recording stopped at a limit; the file is complete.
    case limitReached(RecordingStopReason)
    /// The output file cannot be created (directory missing or not writable).
    case cannotCreate(path: String, reason: String)
    /// Something already exists at the output path; files are never overwritten
    /// unless `overwritesExistingFiles` asks for it.
    case outputExists(path: String)
    /// The settings cannot be used.
    case unsupported(String)
    /// The container cannot hold the track's codec (`codec` as libavcodec names it).
    case containerCannotHold(fileType: FileType, codec: String, mediaType: MediaType)
    /// Compressed frames were to be copied, and the camera delivers raw ones in this pixel format.
    case copyNeedsCompressedFrames(pixelFormat: String)
    /// The disk filled up; the file is readable up to its last fragment.
    case diskFull(path: String)
    /// Writing failed.
    case writeFailed(path: String, reason: String)
    /// Samples were captured for the file and none could be written (an
    /// H.264 camera that never sent a keyframe, every frame damaged).
    case nothingWritten(path: String, reason: String)
    /// The recording was stopped (or reached a limit) before any media
    /// could go into the file, which is not there (AVFoundation's
    /// AVErrorNoDataCaptured): no error of the recording, nothing to play.
    case noDataCaptured(path: String)
    /// A capture device went away; the file was finalized.
    case deviceLost(String)
    /// Capture failed.
    case capture(CaptureError)
    /// The motion trigger has no camera to watch.
    case motionNeedsCamera
    /// Silence detection has no microphone to listen to.
    case silenceNeedsMicrophone
    /// The motion trigger reads 8-bit luma from raw pictures, and the
    /// camera at `device` sends `sends` (a codec, or a raw format without it).
    case motionCannotRead(device: String, sends: String)

    /// The file the error is about, when it names one.
    public var path: String? {
        switch self {
        case .cannotCreate(let path, _), .outputExists(let path), .diskFull(let path), .writeFailed(let path, _), .nothingWritten(let path, _),
             .noDataCaptured(let path):
            return path
        case .limitReached, .unsupported, .containerCannotHold, .copyNeedsCompressedFrames, .deviceLost, .capture, .motionNeedsCamera,
             .motionCannotRead, .silenceNeedsMicrophone:
            return nil
        }
    }

    /// Whether the file was finished and is playable despite the error.
    public var recordingSuccessfullyFinished: Bool {
        switch self {
        case .limitReached, .deviceLost: return true
        case .cannotCreate, .outputExists, .unsupported, .containerCannotHold, .copyNeedsCompressedFrames, .diskFull, .writeFailed, .nothingWritten, .capture,
             .noDataCaptured, .motionNeedsCamera, .motionCannotRead, .silenceNeedsMicrophone:
            return false
        }
    }

    public var description: String {
        switch self {
        case .limitReached(let reason): return "the recording reached its \(reason.rawValue) limit"
        case .cannotCreate(let path, let reason): return "\(path): \(reason)"
        case .outputExists(let path): return "\(path): already exists"
        case .unsupported(let reason): return reason
        case .containerCannotHold(let fileType, let codec, let mediaType):
            return "a \(fileType.displayName) file cannot hold \(codec) \(mediaType.rawValue)"
        case .copyNeedsCompressedFrames(let pixelFormat):
            return "copying needs a camera that delivers compressed frames (MJPEG, H.264); this one delivers raw \(pixelFormat) frames"
        case .diskFull(let path): return "\(path): the disk is full"
        case .writeFailed(let path, let reason): return "\(path): \(reason)"
        case .nothingWritten(let path, let reason): return "\(path): no frame could be written: \(reason)"
        case .noDataCaptured(let path): return "\(path): no data was captured before the recording stopped; no file was made"
        case .deviceLost(let device): return "\(device): the device went away during the recording"
        case .capture(let error): return error.description
        case .motionNeedsCamera: return "motion triggering watches a camera's picture, and the session has no camera"
        case .silenceNeedsMicrophone: return "silence detection listens to microphones, and the session has none"
        case .motionCannotRead(let device, let sends):
            return "\(device): motion triggering reads 8-bit luma from raw pictures and this camera sends \(sends)"
        }
    }
}
