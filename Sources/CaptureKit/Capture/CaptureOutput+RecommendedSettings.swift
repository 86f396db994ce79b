/// The writer settings a recording of an output's inputs would use, as
/// AVCaptureVideoDataOutput's `recommendedVideoSettingsForAssetWriter(writingTo:)`
/// and its audio counterpart: for a program that writes the samples it gets
/// with its own `AssetWriter`.
extension CaptureOutput {
    /// Encoder settings for the video of this output's video connection in
    /// a file of `fileType` (the codec capctl records there by default, the
    /// camera's frame rate, and the size of the frames this output hands
    /// over: a video data output's `videoSettings` size, else the
    /// camera's), or nil without a video connection (or before the session
    /// runs: the camera's format is known once it is open), or when the
    /// container holds no video.
    public func recommendedVideoSettingsForAssetWriter(writingTo fileType: FileType) -> VideoOutputSettings? {
        guard var format = connection(with: .video)?.input.videoFormat else { return nil }
        if let wanted = (self as? VideoDataOutput)?.videoSettings {
            format.width = wanted.width ?? format.width
            format.height = wanted.height ?? format.height
        }
        guard case .video(let settings)? = try? RecordingSettings().outputSettings(forVideo: format, fileType: fileType) else { return nil }
        return settings
    }

    /// Encoder settings for the audio of this output's audio connection in a
    /// file of `fileType`, or nil as for video.
    public func recommendedAudioSettingsForAssetWriter(writingTo fileType: FileType) -> AudioOutputSettings? {
        guard let format = connection(with: .audio)?.input.source.audioFormat,
              case .audio(let settings)? = try? RecordingSettings().outputSettings(forAudio: format, fileType: fileType) else { return nil }
        return settings
    }
}
