import CaptureKit

extension RecordingOptions {
    /// Checks the settings, each and against each other, before any device
    /// or file is opened: the one place both `record` and `POST /recordings`
    /// check a recording's settings. Checks that need the devices or the
    /// folder (a file in the way, a camera's formats) happen when the recording is made.
    package func validate() throws(SettingError) {
        try Self.validateCapture(sessionPreset: sessionPreset, size: size, pixelFormat: pixelFormat)
        try validateEncoding()
        try validateCameras()
        try Self.validateOverlay(overlay, position: overlayPosition, cameras: video, copiesVideo: videoCodec == .copy)
        try validatePreset()
        try validateStreaming()
        if !stream.isEmpty && noRealtime {
            throw SettingError(.noRealtime) { "streams are live: \($0[.noRealtime]) would send a file: input faster than it plays; leave it out" }
        }
        try validateRetention()
        if let out {
            try validateFile(out)
        } else {
            guard !stream.isEmpty else {
                throw SettingError(.out) { "give \($0[.out]), the file to record to, or \($0[.stream]) URL (or both)" }
            }
            let fileOnly: [(Bool, Key)] = [(maxSize != nil, .maxSize), (segmentDuration != nil, .segmentDuration), (segmentSize != nil, .segmentSize),
                                           (overwrite, .overwrite), (!metadata.isEmpty, .metadata), (fragmentInterval != nil, .fragmentInterval),
                                           (noFragments, .noFragments), (faststart, .faststart), (fragmentsOnly, .fragmentsOnly),
                                           (audioCodec != nil, .audioCodec), (audioBitrate != nil, .audioBitrate)]
            if let key = fileOnly.first(where: \.0)?.1 { throw SettingError(key) { "\($0[key]) applies to a file; give \($0[.out]) too" } }
        }
        try Self.validateAudioCapture(sampleRate: sampleRate, channels: channels)
        if silenceThreshold != nil && silenceTimeout == nil {
            throw SettingError(.silenceThreshold) {
                "\($0[.silenceThreshold]) sets what \($0[.silenceTimeout]) counts as silence; add \($0[.silenceTimeout]) TIME, such as \($0[.silenceTimeout]) 10s"
            }
        }
        try validateTimeLapse()
        if let maxSize, maxSize.bytes < 64 * 1024 {
            throw SettingError(.maxSize) { "\($0[.maxSize]) \(maxSize) is too small for a file; use at least 64K" }
        }
        if let segmentSize, segmentSize.bytes < 64 * 1024 {
            throw SettingError(.segmentSize) { "\($0[.segmentSize]) \(segmentSize) is too small for a file; use at least 64K" }
        }
        for item in metadata where !item.contains("=") || item.hasPrefix("=") {
            throw SettingError(.metadata) { "\($0[.metadata]) '\(item)' is not KEY=VALUE, such as title=Lecture" }
        }
        if audioAlternates && audio.count < 2 {
            throw SettingError(.audioAlternates) { "\($0[.audioAlternates]) needs two or more \($0[.audio]) devices" }
        }
        if let out {
            try validateTrigger(out: out)
        } else if startPaused || preRoll != nil || resumeOn != nil || filePerEvent {
            throw SettingError(.out) { "pausing, pre-roll and motion triggers apply to a file; give \($0[.out]) too" }
        }
    }

    /// What the cameras are asked for, shared by `record`, `snap` and `serve`.
    package static func validateCapture(sessionPreset: SessionPreset?, size: FrameSizeArgument?, pixelFormat: String?) throws(SettingError) {
        if let preset = sessionPreset, let required = preset.requiredSize, let size, size.width != required.width || size.height != required.height {
            throw SettingError(.sessionPreset) { "\($0[.sessionPreset]) \(preset.rawValue) and \($0[.size]) \(size) disagree; give one of them" }
        }
        if let pixelFormat, pixelFormat.isEmpty || pixelFormat.count > 16 {
            throw SettingError(.pixelFormat) { "\($0[.pixelFormat]) '\(pixelFormat)' is not a fourcc such as YUYV or MJPG" }
        }
    }

    /// What the microphones are asked for, shared by `record` and `serve`.
    package static func validateAudioCapture(sampleRate: Int?, channels: Int?) throws(SettingError) {
        if let sampleRate, !(8000...384_000).contains(sampleRate) {
            throw SettingError(.sampleRate) { "\($0[.sampleRate]) \(sampleRate) is out of range; use 8000 to 384000, such as 48000" }
        }
        if let channels, !(1...16).contains(channels) {
            throw SettingError(.channels) { "\($0[.channels]) \(channels) is out of range; use 1 to 16" }
        }
    }

    /// The overlay's texts (the shared one and each camera's `overlay=`) and
    /// that they are drawn at all; shared by `record` and `serve`.
    package static func validateOverlay(_ overlay: String?, position: TextOverlay.Position?, cameras: [CameraArgument], copiesVideo: Bool) throws(SettingError) {
        let texts = ([overlay] + cameras.map(\.overlay)).compactMap { $0 }
        if position != nil && texts.isEmpty {
            throw SettingError(.overlayPosition) {
                "\($0[.overlayPosition]) places the overlay's text; give \($0[.overlay]) TEXT (or overlay=TEXT on a \($0[.video])) too"
            }
        }
        if copiesVideo && !texts.isEmpty {
            throw SettingError(.overlay) {
                "\($0[.videoCodec]) copy writes the camera's frames untouched and the overlay draws into frames before they are encoded; leave out one of them"
            }
        }
        for text in texts {
            let shared = text == overlay
            let option: @Sendable (SettingNames) -> String = { shared ? $0[.overlay] : "overlay=" }
            if text.isEmpty {
                throw SettingError(.overlay) { "\(option($0)) is empty; give the text to draw, such as \($0[.overlay]) '%Y-%m-%d %H:%M:%S'" }
            }
            if !text.unicodeScalars.allSatisfy({ (32...126).contains($0.value) }) {
                throw SettingError(.overlay) { "\(option($0)) '\(text)': the overlay font has printable ASCII only; write the text without other characters" }
            }
            if text.utf8.count > 200 { throw SettingError(.overlay) { "\(option($0)) is \(text.utf8.count) characters long; a frame shows at most 200" } }
        }
    }

    /// Each camera's own options, and what several cameras cannot do together.
    private func validateCameras() throws(SettingError) {
        for camera in video {
            if let problem = camera.problem { throw SettingError(.video) { "\($0[.video]) \(camera): \(problem)" } }
            if let preset = sessionPreset, let required = preset.requiredSize, let size = camera.size,
               size.width != required.width || size.height != required.height {
                throw SettingError(.sessionPreset) { "\($0[.sessionPreset]) \(preset.rawValue) and \($0[.video]) \(camera),size=\(size) disagree; give one of them" }
            }
        }
        if let out, (try? FileNameTemplate(out))?.hasCameraNumber == true, video.count < 2 {
            throw SettingError(.out) { "%c in \($0[.out]) numbers the cameras' files; it needs two or more \($0[.video]) cameras" }
        }
        if stopOnDeviceLoss && video.count < 2 {
            throw SettingError(.stopOnDeviceLoss) {
                "\($0[.stopOnDeviceLoss]) concerns several cameras; a recording of one camera always stops when it goes away"
            }
        }
        guard video.count > 1 else { return }
        if !stream.isEmpty {
            throw SettingError(.stream) { "a stream carries one camera; record several cameras without \($0[.stream]), or stream one of them" }
        }
        if preRoll != nil || resumeOn != nil {
            throw SettingError(.preRoll) { "\($0[.preRoll]) and \($0[.resumeOn]) watch or keep one camera; record several cameras without them" }
        }
    }

    /// Checks that concern OUT: a template for segments, a container it names.
    private func validateFile(_ out: String) throws(SettingError) {
        if segmentDuration != nil || segmentSize != nil {
            guard (try? FileNameTemplate(out))?.namesEachFile == true else {
                throw SettingError(.out) {
                    "with \($0[.segmentDuration]) or \($0[.segmentSize]), \($0[.out]) must name each file: add %n (the file number), such as 'rec-%3n.mp4'"
                }
            }
        }
        if FileType(path: out) == nil {
            throw SettingError(.out) { _ in "cannot tell the container from '\(out)'; end it in .mp4, .mov, .mkv, .webm, .ts, .wav, .flac, .m4a, .ogg or .opus" }
        }
    }
}
