import CFFmpeg

/// Decodes a camera's compressed frames (MJPEG, H.264 …) for an input that
/// encodes them again: a recording that asks for another codec than the
/// camera delivers, or the camera's only format at the asked size.
/// Frames keep their presentation times (carried through the decoder as
/// nanoseconds), in the order the decoder gives them.
final class CompressedFrameDecoder {
    private let decoder: Decoder
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    /// For codecs with inter frames: whether a keyframe has been decoded yet.
    private var started: Bool

    /// A decoder for `codecName`, given the configuration the frames do not
    /// carry (a file's avcC/hvcC record; empty for a camera's in-band one).
    init(codecName: String, configuration: [UInt8] = []) throws(WriterError) {
        do {
            decoder = try Decoder(codecName: codecName, configuration: configuration)
        } catch {
            if error.code == cffmpeg_AVERROR_DECODER_NOT_FOUND { throw .invalidSettings("no \(codecName) decoder is available in this FFmpeg") }
            throw .ffmpeg(error)
        }
        started = AccessUnit.Codec(codecName: codecName) == nil
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard packet != nil, frame != nil else { throw .ffmpeg(FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM))) }
    }

    deinit {
        av_packet_free(&packet)
        av_frame_free(&frame)
    }

    /// Whether a frame can be decoded: H.264/HEVC start at a keyframe (a
    /// frame before it refers to pictures the decoder never had); other
    /// codecs at any frame.
    func canStart(at isKeyframe: Bool) -> Bool {
        if !started && isKeyframe { started = true }
        return started
    }

    /// Decodes `bytes` (one compressed frame shown at `time`); hands each
    /// picture that comes out, with its time, to `receive`.
    func decode(_ bytes: UnsafeRawBufferPointer, time: MediaTime,
                receive: (UnsafeMutablePointer<AVFrame>, MediaTime) throws(WriterError) -> Void) throws(WriterError) {
        guard let packet, let base = bytes.baseAddress, bytes.count > 0 else { return }
        // The packet does not own the bytes: libavcodec copies what it keeps.
        packet.pointee.data = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(bytes.count)
        packet.pointee.pts = time.converted(toTimescale: MonotonicClock.timescale).value
        let sent = avcodec_send_packet(decoder.context, packet)
        packet.pointee.data = nil
        packet.pointee.size = 0
        // A damaged frame (a USB camera's glitch) is lost, not the recording.
        if sent == cffmpeg_AVERROR_INVALIDDATA { throw .damagedSample("the decoder cannot read the frame at \(time.seconds) s") }
        guard sent >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_send_packet", code: sent)) }
        try drain(receive)
    }

    /// Hands out the pictures the decoder still holds (frames reordered).
    func flush(receive: (UnsafeMutablePointer<AVFrame>, MediaTime) throws(WriterError) -> Void) throws(WriterError) {
        let sent = avcodec_send_packet(decoder.context, nil)
        guard sent >= 0 || sent == cffmpeg_AVERROR_EOF else { throw .ffmpeg(FFmpegError(call: "avcodec_send_packet", code: sent)) }
        try drain(receive)
    }

    private func drain(_ receive: (UnsafeMutablePointer<AVFrame>, MediaTime) throws(WriterError) -> Void) throws(WriterError) {
        guard let frame else { return }
        while true {
            let received = avcodec_receive_frame(decoder.context, frame)
            if received == cffmpeg_AVERROR_EAGAIN || received == cffmpeg_AVERROR_EOF { return }
            if received == cffmpeg_AVERROR_INVALIDDATA { continue }
            guard received >= 0 else { throw .ffmpeg(FFmpegError(call: "avcodec_receive_frame", code: received)) }
            defer { av_frame_unref(frame) }
            let stamp = frame.pointee.best_effort_timestamp != cffmpeg_AV_NOPTS_VALUE ? frame.pointee.best_effort_timestamp : frame.pointee.pts
            guard stamp != cffmpeg_AV_NOPTS_VALUE else { continue }
            try receive(frame, MediaTime(value: stamp, timescale: MonotonicClock.timescale))
        }
    }
}
