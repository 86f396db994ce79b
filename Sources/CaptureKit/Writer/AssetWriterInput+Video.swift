import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Raw video into an input that encodes it: pixel buffers, raw planes, and
/// compressed frames it decodes first.
extension AssetWriterInput {
    // MARK: Appending raw video

    /// Appends one frame shown at `presentationTime` (on the session's
    /// clock) for `duration` (nil: until the next frame). The frame may be
    /// in any pixel format and size libswscale converts from.
    public func append(_ buffer: PixelBuffer, presentationTime: MediaTime, duration: MediaTime? = nil) throws(WriterError) {
        try appendFrame(buffer.frame, presentationTime: presentationTime, duration: duration)
    }

    /// Appends the picture of an AVFrame (a pixel buffer's, or a decoder's),
    /// its planes and strides read in place.
    func appendFrame(_ frame: UnsafeMutablePointer<AVFrame>, presentationTime: MediaTime, duration: MediaTime?) throws(WriterError) {
        try PixelPlanes.with(frame) { planes, strides throws(WriterError) in
            try appendVideo(planes: planes, strides: strides, format: AVPixelFormat(frame.pointee.format),
                            width: frame.pointee.width, height: frame.pointee.height, presentationTime: presentationTime, duration: duration)
        }
    }

    /// Appends one frame from memory the caller owns, such as a mapped
    /// capture buffer: `bytes` holds the image in `format`, rows packed, or
    /// `bytesPerRow` apart for single-plane formats.
    public func appendPixels(_ bytes: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int, bytesPerRow: Int? = nil,
                             presentationTime: MediaTime, duration: MediaTime? = nil) throws(WriterError) {
        try PixelPlanes.with(bytes, format: format, width: width, height: height, bytesPerRow: bytesPerRow) { planes, strides throws(WriterError) in
            try appendVideo(planes: planes, strides: strides, format: format.raw, width: Int32(width), height: Int32(height),
                            presentationTime: presentationTime, duration: duration)
        }
    }

    /// Makes an input that encodes take compressed frames of `codecName`
    /// through `appendDecoding`. `configuration` is what the frames need and
    /// do not carry (a file's avcC/hvcC record). Call before appending.
    public func setUpDecoding(codecName: String, configuration: [UInt8] = []) throws(WriterError) {
        guard !takesCompressedSamples else { throw .invalidState("a passthrough input writes compressed samples as they are") }
        let made = try CompressedFrameDecoder(codecName: codecName, configuration: configuration)
        decodeLock.withLock { decoder = made }
    }

    /// Appends one compressed frame (a camera's MJPEG or H.264) to an input
    /// that encodes: the frame is decoded, then encoded like `appendPixels`.
    /// Needs `setUpDecoding` first. For inputs with passthrough settings use `appendCompressed`.
    /// A frame the decoder cannot read throws `damagedSample`; the input
    /// goes on with the next.
    ///
    /// Decoding a codec with inter frames (H.264, HEVC) starts at a frame
    /// with `isKeyframe`; frames before it count in `framesSkippedBeforeKeyframe`.
    public func appendDecoding(_ bytes: UnsafeRawBufferPointer, presentationTime: MediaTime, duration: MediaTime? = nil,
                               isKeyframe: Bool = true) throws(WriterError) {
        try decodeLock.withLock { () throws(WriterError) in
            guard let decoder else { throw .invalidState("compressed frames need setUpDecoding(codecName:) on an input that encodes") }
            guard decoder.canStart(at: isKeyframe) else {
                lock.withLock { skippedBeforeKeyframe += 1 }
                return
            }
            try decoder.decode(bytes, time: presentationTime) { frame, time throws(WriterError) in
                try appendFrame(frame, presentationTime: time, duration: duration)
            }
        }
    }

    /// Whether the input writes compressed samples as they are (passthrough settings).
    public var takesCompressedSamples: Bool {
        if case .passthrough = outputSettings { return true }
        return false
    }

    func appendVideo(planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>, format: AVPixelFormat,
                             width: Int32, height: Int32, presentationTime: MediaTime, duration: MediaTime?) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard let writer else { throw .invalidState("the input has not been added to a writer") }
            guard !finished else { throw .invalidState("the input is marked as finished") }
            guard videoEncoder != nil || frameRatePending else {
                throw .invalidState(mediaType == .video ? "this input takes compressed samples (passthrough)" : "this input takes audio, not frames")
            }
            guard format != AV_PIX_FMT_NONE, sws_isSupportedInput(format) > 0 else {
                throw .invalidSettings("frames in \(PixelFormat(raw: format)) cannot be converted")
            }
            guard let (placed, session) = try writer.placement(forSource: presentationTime) else { return }
            defer { lastSession = session }
            guard let pts = ticks(placed) else { throw .invalidState("presentation time \(presentationTime) does not fit the track's time scale") }
            if let lastTime, pts <= lastTime {
                throw .invalidState("presentation times must increase: \(presentationTime.seconds) s comes after a frame at the same time or later")
            }
            // Durations: given, or until the next frame (across a pause too:
            // the media runs on without a gap), or else the expected frame
            // duration or the last interval.
            let sameSession = session == lastSession
            if let lastTime, pendingDurations[lastTime] != nil, !explicitDuration.contains(lastTime) {
                pendingDurations[lastTime] = pts - lastTime
            }
            if let lastTime, sameSession { lastInterval = pts - lastTime }
            let givenDuration = duration.flatMap(ticks).flatMap { $0 > 0 ? $0 : nil }
            if let given = givenDuration {
                pendingDurations[pts] = given
                explicitDuration.insert(pts)
            } else {
                pendingDurations[pts] = expectedFrameTicks ?? lastInterval ?? 0
            }
            // (A resume needs no keyframe of its own: the media runs on
            // without a gap, and an extra one would stretch the fragment
            // around it, which readers that cannot seek read as one chunk.)
            var forceKeyframe = false
            if let interval = keyframeIntervalTicks, lastKeyframeTime.map({ pts - $0 >= interval }) ?? true {
                forceKeyframe = true
                lastKeyframeTime = pts
            }
            lastTime = pts
            do throws(WriterError) {
                if frameRatePending, try !settleFrameRate(planes: planes, strides: strides, format: format, width: width, height: height,
                                                          pts: pts, duration: givenDuration, forceKeyframe: forceKeyframe) {
                    framesWritten += 1
                    return
                }
                guard let encoder = videoEncoder else { throw WriterError.invalidState("the input's encoder is closed") }
                try encoder.encode(planes: planes, strides: strides, format: format, width: width, height: height, pts: pts,
                                   forceKeyframe: forceKeyframe) { packet throws(WriterError) in try self.sendEncoded(packet) }
            } catch {
                throw failIfWriterError(error)
            }
            framesWritten += 1
        }
    }
}
