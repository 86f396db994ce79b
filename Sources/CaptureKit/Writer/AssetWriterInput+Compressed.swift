import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Appending compressed samples as they are (passthrough inputs): a camera's
/// or a file's frames copied, or a shared encoder's.
extension AssetWriterInput {
    // MARK: Appending compressed samples

    /// Whether this passthrough input's codec configuration (H.264/HEVC
    /// parameter sets) is not known up front but comes in band with the first
    /// keyframe, as cameras deliver it: the container's header must wait for it.
    var needsConfigurationFromFirstFrame: Bool {
        guard case .passthrough(let format) = outputSettings, format.extradata.isEmpty else { return false }
        return ["h264", "hevc"].contains(format.codecName)
    }

    /// Appends one compressed sample as it is (passthrough inputs). Decode
    /// times must increase. After samples were left out (outside a session),
    /// a stream that is not intra-only resumes at its next keyframe.
    public func append(_ sample: CompressedSample) throws(WriterError) {
        let failure: WriterError? = sample.data.withUnsafeBytes { bytes in
            do throws(WriterError) {
                try appendCompressed(bytes, presentationTime: sample.presentationTime, decodeTime: sample.decodeTime,
                                     duration: sample.duration, isKeyframe: sample.isKeyframe)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Appends one compressed sample from memory the caller owns (such as a
    /// mapped capture buffer): `append(_:)` without the intermediate array.
    ///
    /// The bytes are copied into the packet, unless `owner` is given and the
    /// file has this one track: then the packet refers to `bytes` and keeps
    /// `owner` alive until the muxer lets go of it. With one track nothing
    /// waits to be interleaved, and the muxers write or copy the bytes before
    /// this returns. With several tracks the muxer may hold packets back to
    /// interleave them, and a capture buffer held there would be missing from
    /// the driver's queue.
    public func appendCompressed(_ bytes: UnsafeRawBufferPointer, keeping owner: AnyObject? = nil, presentationTime: MediaTime,
                                 decodeTime: MediaTime? = nil, duration: MediaTime? = nil, isKeyframe: Bool) throws(WriterError) {
        let sample = (presentationTime: presentationTime, decodeTime: decodeTime, duration: duration, isKeyframe: isKeyframe)
        try lock.withLock { () throws(WriterError) in
            guard let writer else { throw .invalidState("the input has not been added to a writer") }
            guard !finished else { throw .invalidState("the input is marked as finished") }
            guard case .passthrough(let format) = outputSettings, let packet else {
                throw .invalidState("compressed samples need an input with passthrough settings")
            }
            guard bytes.count > 0, let source = bytes.baseAddress else { throw .invalidSettings("a compressed sample cannot be empty") }
            guard let (placed, _) = try writer.placement(forSource: sample.presentationTime) else {
                needsKeyframe = !format.isIntraOnly
                return
            }
            if needsKeyframe {
                guard sample.isKeyframe, try configureFromKeyframe(bytes, format: format, writer: writer) else {
                    skippedBeforeKeyframe += 1
                    return
                }
                needsKeyframe = false
            }
            guard let pts = ticks(placed) else { throw .invalidState("presentation time \(sample.presentationTime) does not fit the track's time scale") }
            var dts = pts
            if let decodeTime = sample.decodeTime {
                let offset = sample.presentationTime - decodeTime
                guard offset.isNumeric, let offsetTicks = ticks(offset) else { throw .invalidState("decode time \(decodeTime) is not usable") }
                dts = pts - offsetTicks
            }
            if let lastDecodeTime, dts <= lastDecodeTime {
                throw .invalidState("decode times must increase: \(sample.presentationTime.seconds) s does not come after the previous sample")
            }
            lastDecodeTime = dts
            let size = Int32(bytes.count)
            if let owner, lendsPacketMemory {
                guard let buffer = Self.packetBuffer(lending: source, count: size, keeping: owner) else {
                    throw failIfWriterError(.ffmpeg(FFmpegError(call: "av_buffer_create", code: cffmpeg_averror(ENOMEM))))
                }
                packet.pointee.buf = buffer
                packet.pointee.data = buffer.pointee.data
                packet.pointee.size = size
            } else {
                let allocated = av_new_packet(packet, size)
                guard allocated >= 0 else { throw failIfWriterError(.ffmpeg(FFmpegError(call: "av_new_packet", code: allocated))) }
                packet.pointee.data.update(from: source.assumingMemoryBound(to: UInt8.self), count: Int(size))
            }
            packet.pointee.pts = pts
            packet.pointee.dts = dts
            // Without a duration, a sample lasts the shortest step between
            // presentation times seen so far (samples come in decode order).
            if let lastPresentation = lastPassthroughTime, pts != lastPresentation {
                let step = abs(pts - lastPresentation)
                shortestStep = min(shortestStep ?? step, step)
            }
            lastPassthroughTime = pts
            packet.pointee.duration = sample.duration.flatMap(ticks) ?? shortestStep ?? 0
            packet.pointee.flags = sample.isKeyframe ? AV_PKT_FLAG_KEY : 0
            defer { av_packet_unref(packet) }
            do throws(WriterError) {
                try writer.write(packet: packet, timeBase: timeBase, streamIndex: streamIndex)
            } catch {
                throw failIfWriterError(error)
            }
            if mediaType == .video { framesWritten += 1 }
        }
    }

    /// For a track whose header waits for its parameter sets: takes them
    /// from `keyframe` (in band, Annex B) and hands them to the writer.
    /// False when the keyframe does not carry them (decoding cannot start there).
    private func configureFromKeyframe(_ keyframe: UnsafeRawBufferPointer, format: CompressedFormat, writer: AssetWriter) throws(WriterError) -> Bool {
        guard needsConfigurationFromFirstFrame, writer.awaitsConfiguration(streamIndex: streamIndex) else { return true }
        guard let codec = AccessUnit.Codec(codecName: format.codecName) else { return true }
        let unit = AccessUnit(keyframe, codec: codec)
        guard unit.hasParameterSets else { return false }
        var configuration: [UInt8] = []
        for range in unit.parameterSetRanges { configuration.append(contentsOf: keyframe[range]) }
        do throws(WriterError) {
            try writer.supplyConfiguration(configuration, streamIndex: streamIndex)
        } catch {
            throw failIfWriterError(error)
        }
        return true
    }

    /// A read-only AVBufferRef over `count` bytes at `source` that holds a
    /// reference to `owner` and drops it when libavformat frees the buffer.
    private static func packetBuffer(lending source: UnsafeRawPointer, count: Int32,
                                     keeping owner: AnyObject) -> UnsafeMutablePointer<AVBufferRef>? {
        let kept = Unmanaged.passRetained(owner)
        let buffer = av_buffer_create(UnsafeMutablePointer(mutating: source.assumingMemoryBound(to: UInt8.self)), Int(count), { opaque, _ in
            guard let opaque else { return }
            Unmanaged<AnyObject>.fromOpaque(opaque).release()
        }, kept.toOpaque(), Int32(AV_BUFFER_FLAG_READONLY))
        if buffer == nil { kept.release() }
        return buffer
    }
}
