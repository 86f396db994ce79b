import CFFmpeg

/// A stream's audio: raw samples from the session, encoded for the stream
/// (its own encoder for each connection) and sent beside the video.
/// On the stream's thread only.
extension StreamSender {
    /// Encodes and sends `audio`, from the connection's time zero on.
    /// Samples from before it are left out: before the first connection's
    /// first frame they are not part of the stream; on a later connection
    /// they fall in the gap the loss opened, and count as dropped.
    func encode(_ audio: AudioSampleBuffer) {
        guard let muxer, let origin, let encoder = audioEncoder else { return drop(.audio(audio)) }
        let rate = Int64(audio.sampleRate)
        let start = audio.presentationTime.nanoseconds.value - origin.nanoseconds.value
        let skip = start < 0 ? Int(min(av_rescale_rnd(-start, rate, 1_000_000_000, AV_ROUND_UP), Int64(audio.frameCount))) : 0
        let reconnected = shared.withLock { $0.statistics.connections > 1 }
        if skip > 0, reconnected { shared.withLock { $0.statistics.droppedAudioSamples += Int64(skip) } }
        guard skip < audio.frameCount, let base = audio.bytes.baseAddress else { return }
        // Stream time in the encoder's samples (av_rescale: no overflow on a stream that runs for days).
        let time = av_rescale(max(0, start), Int64(encoder.sampleRate), 1_000_000_000)
        let count = audio.frameCount - skip
        let planes = Self.planes(of: audio, base: base, skipping: skip)
        let timeout = writeTimeout
        var failure: WriterError?
        let silenceBefore = encoder.silenceQueued
        do throws(WriterError) {
            try planes.withUnsafeBufferPointer { pointer throws(WriterError) in
                try encoder.append(planes: pointer.baseAddress!, count: Int32(count), format: audio.format.raw, rate: Int32(audio.sampleRate),
                                   channels: Int32(audio.channels), time: time) { packet throws(WriterError) in
                    try self.sendAudio(packet, into: muxer, timeout: timeout)
                }
            }
        } catch {
            failure = error
        }
        if let failure {
            shared.withLock { $0.statistics.droppedAudioSamples += Int64(count) }
            if case .stream = failure { return lose(failure) }
            return end(failing: failure)
        }
        // The silence that filled a jump in the stamps is sent audio too (at the encoder's rate).
        shared.withLock { $0.statistics.audioSamplesSent += Int64(count) + encoder.silenceQueued - silenceBefore }
        advanceSent(to: start + av_rescale(Int64(audio.frameCount), 1_000_000_000, rate), muxer: muxer)
    }

    /// One encoded packet to the connection.
    func sendAudio(_ packet: UnsafeMutablePointer<AVPacket>, into muxer: StreamMuxer, timeout: Int64) throws(WriterError) {
        try muxer.writeAudio(packet, timeout: timeout)
    }

    /// The 16 plane pointers the encoder takes, past the first `skip` samples
    /// (nil past the buffer's planes).
    private static func planes(of audio: AudioSampleBuffer, base: UnsafeRawPointer, skipping skip: Int) -> [UnsafePointer<UInt8>?] {
        var planes = [UnsafePointer<UInt8>?](repeating: nil, count: 16)
        let bytesPerSample = audio.format.bytesPerSample
        if audio.format.isPlanar {
            for channel in 0..<min(audio.channels, 16) {
                planes[channel] = (base + (channel * audio.frameCount + skip) * bytesPerSample).assumingMemoryBound(to: UInt8.self)
            }
        } else {
            planes[0] = (base + skip * bytesPerSample * audio.channels).assumingMemoryBound(to: UInt8.self)
        }
        return planes
    }
}
