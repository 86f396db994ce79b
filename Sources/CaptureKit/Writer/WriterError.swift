/// Why an `AssetWriter` could not be created, configured or written.
public enum WriterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Something already exists at the output path (a file, a directory or a symbolic link).
    case outputExists(path: String)
    /// The output's directory does not exist.
    case directoryMissing(path: String)
    /// The output's directory is not writable, or the file system is read-only.
    case notWritable(path: String, error: SystemCallError)
    /// Creating the output failed for another reason.
    case cannotCreate(path: String, error: SystemCallError)
    /// The container cannot be written by this build of libavformat.
    case unsupportedFileType(FileType)
    /// No encoder for the codec is present in this build of libavcodec.
    case encoderNotFound(codec: String, tried: [String])
    /// The container cannot carry the codec, or the media type.
    case codecNotAllowed(codec: String, fileType: FileType)
    /// The output settings are not usable (size, rate, pixel format …).
    case invalidSettings(String)
    /// The call is not allowed in the writer's current state (such as adding
    /// an input after writing started, or appending outside a session).
    case invalidState(String)
    /// Writing to the file failed (disk full, I/O error).
    case io(path: String, error: SystemCallError)
    /// An FFmpeg call failed.
    case ffmpeg(FFmpegError)
    /// A compressed sample could not be decoded (a camera's damaged frame):
    /// it is left out, and the input takes the next one.
    case damagedSample(String)
    /// The written file could not be finalized (its index could not be rewritten).
    case malformedOutput(String)
    /// Tracks of these codecs (H.264, HEVC copied from a camera) never got a
    /// keyframe with its parameter sets, so nothing of them could be
    /// written; the file was removed.
    case noDecodableStart(codecs: [String])
    /// A network stream failed: what it was doing (connecting, sending) and why.
    case stream(what: String, reason: String)

    public var description: String {
        switch self {
        case .outputExists(let path): return "\(path): already exists; choose another name or remove it first"
        case .directoryMissing(let path): return "\(path): the directory does not exist"
        case .notWritable(let path, let error): return "\(path): cannot create the file: \(error.reason)"
        case .cannotCreate(let path, let error): return "\(path): cannot create the file: \(error.reason)"
        case .unsupportedFileType(let type): return "\(type.displayName) files cannot be written by this libavformat"
        case .encoderNotFound(let codec, let tried):
            return "no \(codec) encoder in this libavcodec (looked for \(tried.joined(separator: ", ")))"
        case .codecNotAllowed(let codec, let type): return "\(type.displayName) files cannot carry \(codec)"
        case .invalidSettings(let text): return "invalid output settings: \(text)"
        case .invalidState(let text): return text
        case .io(let path, let error): return "\(path): \(error.description)"
        case .ffmpeg(let error): return error.description
        case .damagedSample(let text): return text
        case .malformedOutput(let text): return "cannot finalize the file: \(text)"
        case .noDecodableStart(let codecs):
            let names = codecs.map { $0 == "h264" ? "H.264" : $0 == "hevc" ? "HEVC" : $0 }.joined(separator: ", ")
            return "no \(names) keyframe with its parameter sets arrived, so no frame could be written"
        case .stream(let what, let reason): return "\(what): \(reason)"
        }
    }
}
