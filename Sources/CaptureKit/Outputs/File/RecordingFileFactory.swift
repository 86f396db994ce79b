#if canImport(Glibc)
import Glibc
#endif

/// Makes the files of a recording: names them (a path, or a template's
/// numbered names), chooses each track's settings for the container, and
/// creates the file with its writer, refusing what the container cannot
/// hold before anything is captured into it.
struct RecordingFileFactory {
    /// How the files are named.
    enum Destination {
        case path(String)
        case template(FileNameTemplate)
    }

    let destination: Destination
    let settings: RecordingSettings
    /// How each input's video is shown (its connection's rotation and
    /// mirroring), by input; settled when the recording begins.
    var transforms: [ObjectIdentifier: VideoTransform] = [:]
    let overwritesExistingFiles: Bool
    let recordedMediaTypes: Set<MediaType>
    /// Added to each file's number where a template's `%n` writes it: a
    /// loop recording started again numbers on after the files already
    /// there (see `RecordingRetention`).
    var numberOffset = 0

    /// The path of file `number`: the template's, or the path given (then
    /// numbered: `take.mp4`, `take-2.mp4` …).
    func path(number: Int) -> String {
        switch destination {
        case .template(let template):
            return template.hasCounter ? template.path(number: number + numberOffset)
                                       : FileNameTemplate.numbered(template.path(number: number), number: number)
        case .path(let path):
            return number == 1 ? path : FileNameTemplate.numbered(path, number: number)
        }
    }

    /// The settings of `input`'s video in the container of file `number`,
    /// when an encoder with them can be shared (`VideoCompressor.canShare`),
    /// and the keyframe interval the file's fragments need; nil when the
    /// video is copied or needs an encoder of its own.
    func sharedVideoSettings(for input: CaptureInput, number: Int) throws(RecordingError) -> (settings: VideoOutputSettings, keyframeInterval: MediaTime?)? {
        // A time-lapse encodes only the frames it keeps: each file has an encoder of its own.
        guard settings.timeLapse == nil, input.mediaType == .video, recordedMediaTypes.contains(.video), let format = input.videoFormat,
              let fileType = settings.fileType ?? FileType(path: path(number: number)),
              case .video(let video) = try settings.outputSettings(forVideo: format, fileType: fileType),
              VideoCompressor.canShare(video) else { return nil }
        let fragments = settings.fragmentInterval
        return (video, AssetWriter.writesFragments(every: fragments, in: fileType) ? fragments : nil)
    }

    /// Whether each camera is recorded to a file of its own (`%c` in the template).
    var filePerCamera: Bool {
        if case .template(let template) = destination { return template.hasCameraNumber }
        return false
    }

    /// The path of file `number` of camera `camera` (counted from 1 among
    /// the cameras), starting at `time` (seconds since the epoch).
    func path(number: Int, camera: Int, time: Int = Int(Glibc.time(nil))) -> String {
        guard case .template(let template) = destination else { return path(number: number) }
        return template.hasCounter ? template.path(number: number + numberOffset, camera: camera, time: time)
                                   : FileNameTemplate.numbered(template.path(number: number, camera: camera, time: time), number: number)
    }

    /// Creates file `number` (or the given path) for `inputs` and starts its
    /// writer; with one file per camera, a file for each camera with every
    /// audio input. The inputs in `sharedVideo` (by position) come compressed
    /// from a shared encoder, as the codec named: their frames are written as
    /// they are. Inputs in `leavingOut` (cameras that went away) get no track.
    func open(number: Int, path explicitPath: String? = nil, inputs: [CaptureInput],
              sharedVideo: [Int: String] = [:], leavingOut: Set<Int> = []) throws(RecordingError) -> RecordingFileWriter {
        let recorded = inputs.indices.filter { recordedMediaTypes.contains(inputs[$0].mediaType) && !leavingOut.contains($0) }
        let cameras = inputs.indices.filter { inputs[$0].mediaType == .video && recordedMediaTypes.contains(.video) }
        // Each file: its path, the camera it is of, the inputs it holds.
        var layout: [(path: String, camera: Int?, holds: [Int])]
        if explicitPath == nil, filePerCamera, recorded.contains(where: cameras.contains) {
            let audio = recorded.filter { inputs[$0].mediaType == .audio }
            // One time for all the cameras' files: their names agree.
            let now = Int(time(nil))
            layout = cameras.enumerated().filter { recorded.contains($0.element) }.map { number0, camera in
                (path(number: number, camera: number0 + 1, time: now), camera, [camera] + audio)
            }
        } else {
            layout = [(explicitPath ?? path(number: number), nil, recorded)]
        }
        var parts: [RecordingFilePart] = []
        do throws(RecordingError) {
            for file in layout {
                parts.append(try makePart(path: file.path, camera: file.camera, holding: file.holds, inputs: inputs, sharedVideo: sharedVideo))
            }
        } catch {
            // A file per camera: none is left when one cannot be made.
            for part in parts { part.writer.cancelWriting() }
            throw error
        }
        return RecordingFileWriter(index: number, parts: parts, inputCount: inputs.count)
    }

    /// Creates one file holding the inputs at `positions` and starts its writer.
    private func makePart(path: String, camera: Int?, holding positions: [Int], inputs: [CaptureInput],
                          sharedVideo: [Int: String]) throws(RecordingError) -> RecordingFilePart {
        guard let fileType = settings.fileType ?? FileType(path: path) else {
            throw .unsupported("cannot tell the container from '\(path)'; use .mp4, .mov, .mkv, .webm, .ts, .wav, .flac, .m4a, .ogg or .opus")
        }
        var writerInputs: [Int: AssetWriterInput] = [:]
        var ordered: [AssetWriterInput] = []
        var audioInputs: [AssetWriterInput] = []
        for index in positions {
            let input = inputs[index]
            var outputSettings: OutputSettings
            switch input.mediaType {
            case .video:
                guard let format = input.videoFormat else { throw .unsupported("\(input.source.path): no video format") }
                outputSettings = try settings.outputSettings(forVideo: format, fileType: fileType)
                if let codecName = sharedVideo[index], case .video(let video) = outputSettings {
                    outputSettings = .passthrough(.video(codecName: codecName, width: video.width, height: video.height))
                }
            case .audio:
                guard let format = input.source.audioFormat else { throw .unsupported("\(input.source.path): no audio format") }
                outputSettings = try settings.outputSettings(forAudio: format, fileType: fileType)
            }
            let writerInput = AssetWriterInput(outputSettings: outputSettings)
            writerInput.expectsMediaDataInRealTime = settings.realTime
            // A microphone's tail lost near a cut is silence up to the cut, as a gap inside is.
            writerInput.fillsAudioToSessionEnd = input.mediaType == .audio
            if input.mediaType == .video, let transform = transforms[ObjectIdentifier(input)] { writerInput.transform = transform }
            // Each track names its device, so that a file of several cameras tells them apart.
            writerInput.title = "\(input.source.localizedName) (\(input.source.uniqueID))"
            // A camera's compressed frames recorded with an encoder are decoded first.
            if let format = input.videoFormat, case .compressed(let codecName) = format.layout, !writerInput.takesCompressedSamples {
                do throws(WriterError) {
                    try writerInput.setUpDecoding(codecName: codecName, configuration: format.codecConfiguration)
                } catch {
                    throw .unsupported("\(input.source.path): \(error)")
                }
            }
            writerInputs[index] = writerInput
            ordered.append(writerInput)
            if input.mediaType == .audio { audioInputs.append(writerInput) }
        }
        if overwritesExistingFiles { removeExisting(path) }
        let writer: AssetWriter
        do {
            writer = try AssetWriter(outputPath: path, fileType: fileType)
        } catch {
            throw Self.creationError(error, path: path)
        }
        writer.movieFragmentInterval = settings.fragmentInterval
        writer.shouldOptimizeForNetworkUse = settings.optimizeForNetworkUse
        writer.keepsMovieFragments = settings.keepsMovieFragments
        var metadata = settings.metadata
        if !metadata.contains(where: { $0.key == "creation_time" }) { metadata.append(.creationDate(Self.iso8601Now())) }
        if let camera {
            // A camera's own file names it as its maker, unless the settings name one.
            let source = inputs[camera].source
            if !metadata.contains(where: { $0.key == "make" }) { metadata.append(.make(source.localizedName)) }
            if !metadata.contains(where: { $0.key == "model" }) { metadata.append(.model(source.modelID ?? source.localizedName)) }
        }
        writer.metadata = metadata
        do throws(WriterError) {
            for writerInput in ordered {
                guard writer.canAdd(writerInput) else {
                    throw .invalidSettings(writer.reasonInputCannotBeAdded(writerInput) ?? "the track cannot be added")
                }
                try writer.add(writerInput)
            }
            if settings.audioTracksAreAlternates, audioInputs.count > 1 {
                let group = AssetWriterInputGroup(inputs: audioInputs, defaultInput: audioInputs[0])
                guard writer.canAdd(group) else {
                    throw .invalidSettings("a \(fileType.displayName) file cannot mark audio tracks as alternates")
                }
                try writer.add(group)
            }
            try writer.startWriting()
        } catch {
            writer.cancelWriting()
            switch error {
            case .invalidSettings(let reason), .invalidState(let reason): throw .unsupported("\(path): \(reason)")
            default: throw Self.writeError(error, path: path)
            }
        }
        return RecordingFilePart(path: path, writer: writer, writerInputs: writerInputs, camera: camera)
    }

    private func removeExisting(_ path: String) {
        // Only a file (or a link, itself) is replaced; never a directory.
        if let info = try? Posix.lstat(path), (info.st_mode & S_IFMT) != S_IFDIR { try? Posix.unlink(path) }
    }

    static func creationError(_ error: WriterError, path: String) -> RecordingError {
        switch error {
        case .outputExists: return .outputExists(path: path)
        case .directoryMissing: return .cannotCreate(path: path, reason: "the directory does not exist")
        case .notWritable(_, let cause): return .cannotCreate(path: path, reason: "the directory is not writable (\(cause.reason))")
        case .cannotCreate(_, let cause): return .cannotCreate(path: path, reason: cause.reason)
        case .invalidSettings(let reason): return .unsupported(reason)
        case .unsupportedFileType, .encoderNotFound, .codecNotAllowed: return .unsupported(error.description)
        default: return .cannotCreate(path: path, reason: error.description)
        }
    }

    static func writeError(_ error: WriterError, path: String) -> RecordingError {
        if case .noDecodableStart = error { return .nothingWritten(path: path, reason: error.description + "; the file was removed") }
        if case .io(_, let cause) = error, cause.errno == ENOSPC || cause.errno == EDQUOT { return .diskFull(path: path) }
        if case .ffmpeg(let cause) = error, cause.code == -ENOSPC { return .diskFull(path: path) }
        return .writeFailed(path: path, reason: error.description)
    }

    static func iso8601Now() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let written = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(decoding: buffer[..<written].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

}
