/// Appending a session's samples as they come, as AVAssetWriterInput.append(CMSampleBuffer).
extension AssetWriterInput {
    /// Appends one captured sample, whatever it holds:
    ///
    /// - a raw frame is converted and encoded (as `appendPixels`);
    /// - a compressed frame (a camera's MJPEG or H.264) is written as it is
    ///   on a passthrough input (as `appendCompressed`), or decoded and
    ///   encoded again on an input that encodes (as `appendDecoding`; the
    ///   first compressed sample sets up the decoder for its codec, so
    ///   `setUpDecoding` need not be called);
    /// - audio is resampled and encoded (as `appendAudio`).
    ///
    /// A video sample's `duration` (the device's frame interval) is the
    /// frame's duration when it has one; otherwise the frame lasts until the next.
    ///
    /// Where AVFoundation returns false and sets the writer's `error`, this
    /// throws: a sample the input cannot take (wrong media type, a frame that
    /// cannot be converted, times that do not increase) throws without
    /// harming the writer; a failure of the file fails the writer too, whose
    /// `status` becomes `.failed` with the same error. A compressed frame the
    /// decoder cannot read throws `damagedSample`, and the next may follow.
    public func append(_ sampleBuffer: SampleBuffer) throws(WriterError) {
        switch sampleBuffer {
        case .video(let video):
            switch video.layout {
            case .raw(let format, let bytesPerRow):
                try appendPixels(video.bytes, format: format, width: video.width, height: video.height, bytesPerRow: bytesPerRow,
                                 presentationTime: video.presentationTime, duration: video.duration)
            case .compressed(let codecName):
                if takesCompressedSamples {
                    try appendCompressed(video.bytes, presentationTime: video.presentationTime, decodeTime: video.decodeTime,
                                         duration: video.duration, isKeyframe: video.isKeyframe)
                    return
                }
                guard mediaType == .video else { throw .invalidState("this input takes audio, not frames") }
                if decodeLock.withLock({ decoder == nil }) { try setUpDecoding(codecName: codecName) }
                try appendDecoding(video.bytes, presentationTime: video.presentationTime, duration: video.duration,
                                   isKeyframe: video.isKeyframe)
            }
        case .audio(let audio):
            try appendAudio(audio.bytes, format: audio.format, channels: audio.channels, sampleRate: audio.sampleRate,
                            presentationTime: audio.presentationTime)
        }
    }
}
