import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// What a writer can take before it starts writing: settings the container
/// can hold, inputs and input groups, and the room a regular movie's index
/// will need.
extension AssetWriter {
    // MARK: Configuration

    /// Whether the container can carry a track with these settings. Answered
    /// by libavformat's own codec query for the container, or, where it has
    /// none (MPEG-TS, Ogg, FLAC), by the codecs its muxer is known to take.
    public func canApply(outputSettings: OutputSettings, forMediaType mediaType: MediaType) -> Bool {
        AssetWriter.canApply(outputSettings: outputSettings, forMediaType: mediaType, fileType: fileType)
    }

    /// Whether a container of `fileType` can carry a track with these
    /// settings, asked before any file exists (as a command checks its
    /// options before creating its output).
    public static func canApply(outputSettings: OutputSettings, forMediaType mediaType: MediaType, fileType: FileType) -> Bool {
        guard outputSettings.mediaType == mediaType, fileType.availableMediaTypes.contains(mediaType) else { return false }
        return container(fileType, canCarry: outputSettings.codecID)
    }

    /// How many bytes of the file exist so far: those on disk plus those the
    /// muxer still buffers. What a size limit is measured against.
    public var bytesWritten: Int64 {
        lock.withLock {
            guard let io else { return (try? file.size()) ?? 0 }
            // No system call: asked for every sample during a recording.
            return max(io.extent, avio_tell(io.context))
        }
    }

    /// What the file will hold once the muxer writes what it buffers and
    /// finalizes it: the header, the packets appended, and their index
    /// entries (about 24 bytes a sample in fragments or the movie box),
    /// plus room for the trailer. A size limit stops before this reaches it.
    public var estimatedFinalSize: Int64 {
        let written = bytesWritten
        return lock.withLock {
            let classic = max(written, headerBytes + payloadBytes + packetCount * 24) + 4096
            guard becomesRegularMovie else { return classic }
            // The regular movie's index comes on top of the fragments.
            return max(classic, written + regularIndexEstimate())
        }
    }

    /// At least the size of the movie box a file written in fragments gets
    /// when finished: the fragmented one (part of the header) with sample
    /// tables counted from the packets written. Lock held.
    func regularIndexEstimate() -> Int64 {
        var bytes = headerBytes + 4096
        let interval = max(settings.fragmentInterval.seconds, 0.001)
        for (index, span) in spans.enumerated() {
            bytes += Int64(span.timeRuns + span.offsetRuns) * 8 + Int64(span.samples) * 4 + 256
            if span.keyframes < span.samples { bytes += Int64(span.keyframes) * 4 }
            // One chunk (in 'stsc' and 'stco'/'co64') per fragment and track;
            // fragments last at least the interval.
            let scale = index < inputList.count ? Double(format?.pointee.streams[index]?.pointee.time_base.den ?? 90000) : 90000
            let length = Double((span.runs.last?.end ?? 0) - (span.firstDecode ?? 0)) / max(scale, 1)
            bytes += Int64((length / interval + 2) * 2) * 20
        }
        return bytes
    }

    static func container(_ fileType: FileType, canCarry codec: AVCodecID) -> Bool {
        guard codec != AV_CODEC_ID_NONE, let muxer = av_guess_format(fileType.muxerName, nil, nil) else { return false }
        let answer = avformat_query_codec(muxer, codec, FF_COMPLIANCE_NORMAL)
        if answer >= 0 { return answer == 1 }
        // No answer from libavformat: what these muxers accept.
        let known: [AVCodecID]
        switch fileType {
        case .mpegTS: known = [AV_CODEC_ID_H264, AV_CODEC_ID_HEVC, AV_CODEC_ID_AAC, AV_CODEC_ID_OPUS, AV_CODEC_ID_MP2, AV_CODEC_ID_MP3, AV_CODEC_ID_AC3, AV_CODEC_ID_MPEG2VIDEO]
        case .ogg: known = [AV_CODEC_ID_OPUS, AV_CODEC_ID_FLAC, AV_CODEC_ID_VORBIS, AV_CODEC_ID_SPEEX]
        case .opus: known = [AV_CODEC_ID_OPUS]
        case .flac: known = [AV_CODEC_ID_FLAC]
        default: known = []
        }
        return known.contains(codec)
    }

    /// Why `canAdd(_:)` says no, or nil when the input can be added.
    public func reasonInputCannotBeAdded(_ input: AssetWriterInput) -> String? {
        lock.withLock { addRefusal(input) }
    }

    func addRefusal(_ input: AssetWriterInput) -> String? {
        if state != .unknown { return "inputs cannot be added once writing has started" }
        if inputList.contains(where: { $0 === input }) { return "the input is already added" }
        if input.writer != nil { return "the input belongs to another writer" }
        if !fileType.availableMediaTypes.contains(input.mediaType) {
            return "\(fileType.displayName) files cannot hold \(input.mediaType.rawValue)"
        }
        if !canApply(outputSettings: input.outputSettings, forMediaType: input.mediaType) {
            return "\(fileType.displayName) files cannot carry \(input.outputSettings.codecName)"
        }
        return nil
    }

    /// Whether `input` can be added: the writer has not started, and the
    /// container can carry its media type and codec.
    public func canAdd(_ input: AssetWriterInput) -> Bool { reasonInputCannotBeAdded(input) == nil }

    /// Adds an input (one track). Throws when `canAdd(_:)` would say no.
    public func add(_ input: AssetWriterInput) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            if let reason = addRefusal(input) {
                if state == .unknown, !canApply(outputSettings: input.outputSettings, forMediaType: input.mediaType) {
                    throw .codecNotAllowed(codec: input.outputSettings.codecName, fileType: fileType)
                }
                throw .invalidState(reason)
            }
            input.writer = self
            inputList.append(input)
        }
    }

    /// Whether a group of alternate inputs can be added: the container has
    /// alternate tracks, the inputs are this writer's, share a media type,
    /// and are in no other group.
    public func canAdd(_ group: AssetWriterInputGroup) -> Bool { lock.withLock { groupRefusal(group) == nil } }

    func groupRefusal(_ group: AssetWriterInputGroup) -> String? {
        if state != .unknown { return "input groups cannot be added once writing has started" }
        if !fileType.supportsAlternateGroups { return "\(fileType.displayName) files have no alternate tracks" }
        if group.inputs.isEmpty { return "the group has no inputs" }
        if !group.inputs.allSatisfy({ input in inputList.contains { $0 === input } }) { return "add the group's inputs to the writer first" }
        if Set(group.inputs.map(\.mediaType)).count != 1 { return "a group's inputs must all have the same media type" }
        if let defaultInput = group.defaultInput, !group.inputs.contains(where: { $0 === defaultInput }) {
            return "the default input is not in the group"
        }
        for existing in groupList {
            if existing.inputs.contains(where: { old in group.inputs.contains { $0 === old } }) { return "an input is already in another group" }
        }
        return nil
    }

    /// Adds a group of alternate inputs: their tracks are marked as
    /// alternates of each other, the default input's track enabled and the
    /// others disabled.
    public func add(_ group: AssetWriterInputGroup) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            if let reason = groupRefusal(group) { throw .invalidState(reason) }
            groupList.append(group)
            for input in group.inputs { input.marksOutputTrackAsEnabled = input === group.defaultInput }
        }
    }
}
