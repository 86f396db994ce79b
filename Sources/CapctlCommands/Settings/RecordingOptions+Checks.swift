import CaptureKit

/// The checks of encoding, streams, loop recording, triggers and time-lapse.
extension RecordingOptions {
    func validateEncoding() throws(SettingError) {
        if let crf, !(0...63).contains(crf) {
            throw SettingError(.crf) { "\($0[.crf]) \(crf) is out of range; use 0 to 51 for h264/hevc (23 is the default), up to 63 for vp9/av1" }
        }
        if crf != nil && bitrate != nil {
            throw SettingError(.crf) { "\($0[.crf]) and \($0[.bitrate]) both set the rate; give one" }
        }
        if let threads, !(0...64).contains(threads) {
            throw SettingError(.threads) { "\($0[.threads]) \(threads) is out of range; use 0 (automatic) to 64" }
        }
        if videoCodec == .copy && (crf != nil || bitrate != nil || preset != nil || keyframeInterval != nil || maxrate != nil) {
            throw SettingError(.videoCodec) {
                "\($0[.videoCodec]) copy writes frames as they come; \($0[.crf]), \($0[.bitrate]), \($0[.maxrate]), \($0[.preset]) and \($0[.keyframeInterval]) need an encoder"
            }
        }
        if bufsize != nil && maxrate == nil {
            throw SettingError(.bufsize) { "\($0[.bufsize]) is the buffer of a rate cap; give \($0[.maxrate]) too" }
        }
        if let maxrate, maxrate.bytes < 10_000 {
            throw SettingError(.maxrate) { "\($0[.maxrate]) \(maxrate) is too low for video; use at least 10K, such as 4M" }
        }
        if fragmentInterval != nil && (noFragments || faststart) {
            throw SettingError(.fragmentInterval) {
                "\($0[.fragmentInterval]) and \($0[.noFragments])/\($0[.faststart]) contradict each other; give one"
            }
        }
        if fragmentsOnly && (noFragments || faststart) {
            throw SettingError(.fragmentsOnly) { "\($0[.fragmentsOnly]) and \($0[.noFragments])/\($0[.faststart]) contradict each other; give one" }
        }
    }

    /// The codec the file's video is encoded with: the one asked for, else
    /// the container's usual one (H.264 when only streaming); nil for copy.
    var encodedVideoCodec: VideoCodec? {
        switch videoCodec?.encoding ?? .automatic {
        case .encode(let codec): return codec
        case .passthrough: return nil
        case .automatic: return out.flatMap(FileType.init(path:)).map(RecordingSettings.defaultVideoCodec(for:)) ?? .h264
        }
    }

    /// Refuses a preset the file's encoder does not take, naming those it
    /// does (libavcodec states them). Without an encoder for the codec, the
    /// recording refuses the codec itself.
    func validatePreset() throws(SettingError) {
        guard let preset, let codec = encodedVideoCodec, let found = EncoderCatalog.presets(for: codec) else { return }
        let (encoder, presets) = found
        guard !presets.accepts(preset) else { return }
        if presets == .none {
            throw SettingError(.preset) { "\($0[.preset]): the \(codec.rawValue) encoder (\(encoder)) has no speed presets; leave \($0[.preset]) out" }
        }
        throw SettingError(.preset) { "\($0[.preset]) '\(preset)' is not a \(encoder) preset; use \(presets)" }
    }

    /// The stream destinations, checked in form only: scheme, host and port.
    /// No name is looked up here: a host that does not resolve is a stream
    /// that cannot connect, reported (and retried) while recording.
    func streamDestinations() throws(SettingError) -> [StreamDestination] {
        var destinations: [StreamDestination] = []
        for url in stream {
            do throws(StreamDestinationError) {
                destinations.append(try StreamDestination(url, format: streamFormat))
            } catch {
                throw SettingError(.stream) { "\($0[.stream]) \(StreamDestination.redacted(url)): \(error.description)" }
            }
        }
        return destinations
    }

    func validateStreaming() throws(SettingError) {
        guard !stream.isEmpty else {
            let named: [(Bool, Key)] = [(streamFormat != nil, .streamFormat), (streamRequired, .streamRequired),
                                        (streamVideoBitrate != nil, .streamVideoBitrate), (streamPreset != nil, .streamPreset),
                                        (streamAudioBitrate != nil, .streamAudioBitrate), (streamKeyframeInterval != nil, .streamKeyframeInterval),
                                        (streamTimeout != nil, .streamTimeout)]
            if let key = named.first(where: \.0)?.1 { throw SettingError(key) { "\($0[key]) applies to streams; add \($0[.stream]) URL" } }
            return
        }
        if let rate = streamVideoBitrate, rate.bytes < 10_000 {
            throw SettingError(.streamVideoBitrate) { "\($0[.streamVideoBitrate]) \(rate) is too low for video; use at least 10K, such as 2500K" }
        }
        if let interval = streamKeyframeInterval, !(interval.time.seconds > 0) {
            throw SettingError(.streamKeyframeInterval) { "\($0[.streamKeyframeInterval]) must be longer than 0, such as 2s" }
        }
        if let rate = streamAudioBitrate, rate.bytes < 8_000 {
            throw SettingError(.streamAudioBitrate) { "\($0[.streamAudioBitrate]) \(rate) is too low; use at least 8K, such as 128K" }
        }
        if let timeout = streamTimeout, timeout.time.seconds < 0.1 {
            throw SettingError(.streamTimeout) { "\($0[.streamTimeout]) \(timeout) is too short; use at least 100ms, such as 5s" }
        }
        _ = try streamDestinations()
    }

    /// A retention needs a series of files (segments or a file per event)
    /// whose names tell them apart, in one folder.
    func validateRetention() throws(SettingError) {
        if let keepFiles, keepFiles < 1 {
            throw SettingError(.keepFiles) { "\($0[.keepFiles]) \(keepFiles) would keep no file; give 1 or more" }
        }
        if let keepSize, keepSize.bytes < 64 * 1024 {
            throw SettingError(.keepSize) { "\($0[.keepSize]) \(keepSize) is too small for a file; use at least 64K" }
        }
        let given: Key? = keepFiles != nil ? .keepFiles : keepSize != nil ? .keepSize : keepAge != nil ? .keepAge
            : onLowSpace == .rotate ? .onLowSpace : nil
        guard let key = given else { return }
        let option: @Sendable (SettingNames) -> String = { key == .onLowSpace ? $0[key] + " rotate" : $0[key] }
        guard let out else { throw SettingError(key) { "\(option($0)) deletes files of a recording; give \($0[.out]) too" } }
        // A template that is not one says why when the recording is made.
        guard let template = try? FileNameTemplate(out) else { return }
        guard template.hasCounter || template.hasTimeFields else {
            throw SettingError(key) {
                "\(option($0)) tells the recording's files by their names: \($0[.out]) needs %n or time fields, such as 'rec-%3n.mp4' or 'rec-%Y%m%d-%H%M%S.mp4'"
            }
        }
        if let slash = out.lastIndex(of: "/"), out[..<slash].contains("%") {
            throw SettingError(key) {
                "\(option($0)) looks for the recording's files in \($0[.out])'s folder: put %n and time fields in the file's name, not its folder"
            }
        }
        guard segmentDuration != nil || segmentSize != nil || filePerEvent else {
            throw SettingError(key) {
                "\(option($0)) deletes the oldest files of a series: add \($0[.segmentDuration]), \($0[.segmentSize]) or \($0[.filePerEvent])"
            }
        }
        if onLowSpace == .rotate && minFreeSpace.bytes == 0 {
            throw SettingError(.onLowSpace) {
                "\($0[.onLowSpace]) rotate acts at the \($0[.minFreeSpace]) floor, which 0 turns off; give a floor such as \($0[.minFreeSpace]) 1G"
            }
        }
        if let keepSize, let segmentSize, keepSize.bytes < segmentSize.bytes {
            throw SettingError(.keepSize) {
                "\($0[.keepSize]) \(keepSize) cannot hold one \($0[.segmentSize]) \(segmentSize) file; give a larger \($0[.keepSize])"
            }
        }
    }

    /// Pre-roll and motion triggers, against each other and OUT.
    func validateTrigger(out: String) throws(SettingError) {
        if preRollMemory != nil && preRoll == nil {
            throw SettingError(.preRollMemory) { "\($0[.preRollMemory]) bounds a pre-roll; add \($0[.preRoll]) TIME, such as \($0[.preRoll]) 5s" }
        }
        if let preRollMemory, preRollMemory.bytes < 1_048_576 {
            throw SettingError(.preRollMemory) { "\($0[.preRollMemory]) \(preRollMemory) is too small to hold a keyframe; use at least 1MiB" }
        }
        if preRoll != nil && videoCodec == .copy {
            throw SettingError(.preRoll) {
                "\($0[.preRoll]) keeps video as the encoder compresses it; \($0[.videoCodec]) copy cannot be kept: leave out \($0[.videoCodec]) copy"
            }
        }
        if resumeOn == nil && (pauseAfterStill != nil || minEvent != nil) {
            throw SettingError(.resumeOn) { "\($0[.pauseAfterStill]) and \($0[.minEvent]) tune motion triggering; add \($0[.resumeOn]) motion" }
        }
        if filePerEvent, (try? FileNameTemplate(out))?.namesEachFile != true {
            throw SettingError(.filePerEvent) {
                "with \($0[.filePerEvent]), \($0[.out]) must name each file: add %n (the file number) or time fields, such as 'event-%3n.mp4' or 'event-%Y%m%d-%H%M%S.mp4'"
            }
        }
    }

    /// What a time-lapse cannot go with.
    func validateTimeLapse() throws(SettingError) {
        guard timelapse != nil else {
            if timelapseFps != nil {
                throw SettingError(.timelapseFps) {
                    "\($0[.timelapseFps]) is the rate a time-lapse plays at; add \($0[.timelapse]) INTERVAL, such as \($0[.timelapse]) 10s (\($0[.fps]) sets the camera's rate)"
                }
            }
            return
        }
        if !audio.isEmpty {
            throw SettingError(.timelapse) { "a time-lapse has no sound (its frames are seconds or minutes apart); leave out \($0[.audio])" }
        }
        if !stream.isEmpty {
            throw SettingError(.timelapse) { "a time-lapse is written to a file, and a stream plays live; leave out \($0[.stream])" }
        }
        if videoCodec == .copy {
            throw SettingError(.timelapse) {
                "a time-lapse keeps some of the camera's frames and times them anew, so it is encoded; leave out \($0[.videoCodec]) copy"
            }
        }
        if preRoll != nil || resumeOn != nil {
            throw SettingError(.timelapse) {
                "a time-lapse keeps one frame an interval, which \($0[.preRoll]) and \($0[.resumeOn]) cannot follow; leave them out"
            }
        }
        if let out, FileType(path: out)?.availableMediaTypes.contains(.video) == false {
            throw SettingError(.timelapse) { _ in "a time-lapse is a movie; record to .mp4, .mov, .mkv, .webm or .ts" }
        }
    }
}
