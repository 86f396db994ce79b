import CaptureKit

/// What the settings ask of CaptureKit: capture requests, encoding, the
/// recording's limits, retention, triggers, silence watch, time-lapse and streams.
extension RecordingOptions {
    /// What every camera is asked for, unless it asks otherwise.
    var videoRequest: CaptureVideoRequest {
        Self.videoRequest(preset: sessionPreset, size: size, fps: fps, pixelFormat: pixelFormat, libv4l2: libv4l2)
    }

    /// The capture request these options make (also `snap`'s and `serve`'s).
    static func videoRequest(preset: SessionPreset?, size: FrameSizeArgument?, fps: RateArgument?, pixelFormat: String?,
                             libv4l2: Bool) -> CaptureVideoRequest {
        CaptureVideoRequest(preset: preset, width: size?.width, height: size?.height, framesPerSecond: fps?.value,
                            pixelFormat: pixelFormat, useLibv4l2: libv4l2)
    }

    var audioRequest: CaptureAudioRequest { CaptureAudioRequest(sampleRate: sampleRate, channels: channels) }

    /// The overlay of a camera with no text of its own.
    var sharedOverlay: TextOverlay? { Self.overlay(overlay, position: overlayPosition) }

    /// Camera `camera`'s overlay: its own text, else the shared one.
    func overlay(of camera: CameraArgument) -> TextOverlay? { Self.overlay(camera.overlay ?? overlay, position: overlayPosition) }

    /// `text` as an overlay at `position` (top left unless given); also `serve`'s.
    static func overlay(_ text: String?, position: TextOverlay.Position?) -> TextOverlay? {
        text.map { TextOverlay(text: $0, position: position ?? .topLeft) }
    }

    /// The file's encoding.
    var encodingSettings: RecordingSettings {
        var settings = RecordingSettings()
        if let videoCodec { settings.video = videoCodec.encoding }
        settings.quality = crf
        settings.videoBitRate = bitrate.map { Int($0.bytes) }
        settings.encoderPreset = preset
        settings.maxBitRate = maxrate.map { Int($0.bytes) }
        settings.rateBufferSize = bufsize.map { Int($0.bytes) }
        settings.keyframeInterval = keyframeInterval?.time
        if let threads { settings.videoEncoderOptions["threads"] = String(threads) }
        settings.audioCodec = audioCodec?.codec
        settings.audioBitRate = audioBitrate.map { Int($0.bytes) }
        if noFragments || faststart {
            settings.fragmentInterval = .invalid
        } else if let fragmentInterval {
            settings.fragmentInterval = fragmentInterval.time
        }
        settings.optimizeForNetworkUse = faststart
        settings.keepsMovieFragments = fragmentsOnly
        settings.audioTracksAreAlternates = audioAlternates
        settings.realTime = !noRealtime
        settings.timeLapse = timelapse.map { TimeLapse(interval: $0.time, framesPerSecond: timelapseFps?.value ?? Self.defaultTimeLapseRate) }
        settings.metadata = metadata.map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return MetadataItem(key: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : "")
        }
        return settings
    }

    /// The frame rate a time-lapse plays at when none is given.
    static let defaultTimeLapseRate = 30.0

    /// The recording as CaptureKit's `CaptureRecorder` takes it (the settings were validated).
    var recorderConfiguration: CaptureRecorderConfiguration {
        let settings = encodingSettings
        var recording = CaptureRecorderConfiguration(destination: out)
        recording.settings = settings
        recording.maxDuration = maxDuration?.time
        recording.maxSize = maxSize?.bytes
        recording.minFreeSpace = minFreeSpace.bytes
        recording.segmentDuration = segmentDuration?.time
        recording.segmentSize = segmentSize?.bytes
        recording.overwritesExistingFiles = overwrite
        recording.retention = RecordingRetention(maxFiles: keepFiles, maxBytes: keepSize?.bytes, maxAge: keepAge?.time,
                                                 lowSpace: onLowSpace == .rotate ? .deleteOldest : .stop)
        recording.stopsOnDeviceLoss = stopOnDeviceLoss
        recording.startsPaused = startPaused
        recording.preRoll = preRoll?.time
        recording.preRollMemoryLimit = preRollMemory.map { Int($0.bytes) }
        recording.filePerEvent = filePerEvent
        if case .motion(let percent)? = resumeOn {
            var motion = MotionDetector.Configuration()
            if let percent { motion.threshold = percent }
            if let minEvent { motion.minimumDuration = minEvent.time }
            if let pauseAfterStill { motion.stillDuration = pauseAfterStill.time }
            recording.motion = motion
        }
        if let silenceTimeout {
            recording.silence = AudioSilenceMonitor.Configuration(
                threshold: silenceThreshold?.decibels ?? AudioSilenceMonitor.Configuration.defaultThreshold, timeout: silenceTimeout.time)
        }
        let fileType = out.flatMap { FileType(path: $0) }
        recording.streams = ((try? streamDestinations()) ?? []).map { destination in
            CaptureRecorderStream(destination: destination, settings: streamSettings(from: settings, fileType: fileType, format: destination.format),
                                  keyframeInterval: streamKeyframeInterval?.time, connectionTimeout: streamTimeout?.time)
        }
        recording.streamsAreRequired = streamRequired
        return recording
    }

    /// The streams' encoding: the file's (so that one encoder feeds both),
    /// unless a stream setting asks for its own, or the file's video cannot
    /// be streamed (copied camera frames, a codec the container cannot carry).
    func streamSettings(from file: RecordingSettings, fileType: FileType?, format: StreamFormat) -> RecordingSettings {
        var settings = file
        settings.realTime = true
        let codec: VideoCodec? = switch file.video {
        case .encode(let chosen): chosen
        case .automatic: fileType.map(RecordingSettings.defaultVideoCodec(for:)) ?? .h264
        case .passthrough: nil
        }
        let streamable = codec.map { format.videoCodecs.contains($0 == .hevc ? "hevc" : $0.rawValue) } ?? false
        if !streamable {
            settings.video = .encode(.h264)
            settings.quality = nil
            settings.videoBitRate = nil
            settings.encoderPreset = nil
            settings.videoEncoderOptions = file.videoEncoderOptions.filter { $0.key == "threads" }
        }
        if let rate = streamVideoBitrate {
            settings.videoBitRate = Int(rate.bytes)
            settings.quality = nil
            // A stream given a rate keeps to it: the rate is also its cap, over two seconds.
            settings.maxBitRate = Int(rate.bytes)
            settings.rateBufferSize = nil
        }
        if let streamPreset { settings.encoderPreset = streamPreset.name }
        settings.audioCodec = .aac
        settings.audioBitRate = streamAudioBitrate.map { Int($0.bytes) } ?? 128_000
        return settings
    }
}
