import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Raw audio into an input that encodes it.
extension AssetWriterInput {
    // MARK: Appending raw audio

    /// Appends interleaved audio (or, for planar formats, the channels' planes
    /// one after another) whose first sample plays at `presentationTime`.
    /// Any rate, channel count and sample format is resampled to the
    /// encoder's. Samples falling outside a session are left out (trimmed to
    /// the sample, in containers without edit lists).
    public func appendAudio(_ bytes: UnsafeRawBufferPointer, format: AudioSampleFormat, channels: Int, sampleRate: Int,
                            presentationTime: MediaTime) throws(WriterError) {
        guard channels > 0, channels <= 16, sampleRate > 0, sampleRate <= 768_000 else {
            throw .invalidSettings("\(channels) channels at \(sampleRate) Hz is out of range")
        }
        let frameBytes = format.bytesPerSample * channels
        guard bytes.count % frameBytes == 0 else {
            throw .invalidSettings("\(bytes.count) bytes is not a whole number of \(channels)-channel \(format.rawValue) samples")
        }
        let count = bytes.count / frameBytes
        guard count > 0, let base = bytes.baseAddress else { return }
        try lock.withLock { () throws(WriterError) in
            guard let writer else { throw .invalidState("the input has not been added to a writer") }
            guard !finished else { throw .invalidState("the input is marked as finished") }
            guard let encoder = audioEncoder else {
                throw .invalidState(mediaType == .audio ? "this input takes compressed samples (passthrough)" : "this input takes frames, not audio")
            }
            // On the samples' clock: nanosecond capture stamps plus a span in
            // 1/rate units would need a common timescale beyond 32 bits.
            var span = MediaTime(value: Int64(count), timescale: Int32(sampleRate))
            if presentationTime.isNumeric, presentationTime.timescale > span.timescale { span = span.converted(toTimescale: presentationTime.timescale) }
            guard let (skip, time, keep) = try writer.placement(forSource: presentationTime, duration: span) else { return }
            let skipSamples = Int(skip.converted(toTimescale: Int32(sampleRate)).value)
            let keepSamples = Int(keep.converted(toTimescale: Int32(sampleRate)).value)
            guard keepSamples > 0, skipSamples >= 0, skipSamples + keepSamples <= count else { return }
            let start = time.converted(toTimescale: encoder.sampleRate)
            guard start.isNumeric else { throw .invalidState("presentation time \(presentationTime) does not fit the track's time scale") }
            if firstAudioTime == nil {
                if fillsFromSessionStart {
                    // The file's start on the encoder's clock (the timeline offset included).
                    let fileStart = writer.fileStartTime.converted(toTimescale: encoder.sampleRate)
                    // Set before the silence is encoded: the encoder's priming, which
                    // comes out with it, ends there and is left out (`dropsPriming`).
                    firstAudioTime = fileStart.isNumeric ? fileStart.value : start.value
                    let filled = fileStart.isNumeric ? try encoder.fillSilence(from: fileStart.value, until: start.value) { packet throws(WriterError) in
                        try self.sendEncoded(packet)
                    } : false
                    if !filled { firstAudioTime = start.value }
                } else {
                    firstAudioTime = start.value
                }
            }
            var planes = [UnsafePointer<UInt8>?](repeating: nil, count: 16)
            let bytesPerSample = format.bytesPerSample
            if format.isPlanar {
                for channel in 0..<channels {
                    planes[channel] = UnsafePointer((base + channel * count * bytesPerSample + skipSamples * bytesPerSample).assumingMemoryBound(to: UInt8.self))
                }
            } else {
                planes[0] = UnsafePointer((base + skipSamples * frameBytes).assumingMemoryBound(to: UInt8.self))
            }
            do throws(WriterError) {
                try planes.withUnsafeBufferPointer { pointer throws(WriterError) in
                    try encoder.append(planes: pointer.baseAddress!, count: Int32(keepSamples), format: format.raw, rate: Int32(sampleRate),
                                               channels: Int32(channels), time: start.value) { packet throws(WriterError) in try self.sendEncoded(packet) }
                }
            } catch {
                throw failIfWriterError(error)
            }
        }
    }

    /// Fills the audio up to `end` (file time, the last session's end)
    /// with silence, when `fillsAudioToSessionEnd` asks for it and more
    /// than a codec frame is missing there. A file that no audio reached at
    /// all while its microphone ran on (`fillsAudioFromSessionStart`: all of
    /// it lost on the way, a segment cut during a stall) is silence from its
    /// start. Called by the writer as it finishes.
    func fillAudio(toFileTime end: MediaTime) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard fillsToSessionEnd, !finished, let encoder = audioEncoder else { return }
            let target = end.converted(toTimescale: encoder.sampleRate)
            guard target.isNumeric else { return }
            guard firstAudioTime != nil else {
                guard fillsFromSessionStart, let writer else { return }
                let fileStart = writer.fileStartTime.converted(toTimescale: encoder.sampleRate)
                guard fileStart.isNumeric else { return }
                firstAudioTime = fileStart.value
                let filled = try encoder.fillSilence(from: fileStart.value, until: target.value) { packet throws(WriterError) in
                    try self.sendEncoded(packet)
                }
                if !filled { firstAudioTime = nil }
                return
            }
            try encoder.fillSilence(until: target.value) { packet throws(WriterError) in try self.sendEncoded(packet) }
        }
    }
}
