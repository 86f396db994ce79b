import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// The frame rate a video encoder is told, for inputs whose settings name
/// none. Rate control budgets bits per frame from it: an encoder told
/// nothing takes the track's time base (1/90000) as its rate and spends a
/// bit rate meant for 30 frames a second on 90000, which leaves every
/// picture flat grey (and SVT-AV1 refuses more than 240). So the rate comes
/// from the settings' `expectedFrameDuration`, else from the first frame's
/// duration or the step between the first two frames' times; the first
/// frame waits, copied, for the second, and the file's header waits for
/// the encoder opened at that rate.
extension AssetWriterInput {
    /// The rate an input starts from before its frames say otherwise, and
    /// the one a single-frame track keeps.
    static let provisionalFrameDuration = MediaTime(value: 1, timescale: 30)

    /// The fastest rate every offered encoder accepts (SVT-AV1's limit).
    static let fastestFrameDuration = MediaTime(value: 1, timescale: 240)

    /// Whether the track's header waits for the frame rate its first frames give.
    var needsFrameRateFromFirstFrames: Bool {
        guard case .video(let settings) = outputSettings else { return false }
        return settings.expectedFrameDuration == nil
    }

    /// Handles a frame of an input whose rate is not settled yet: the first
    /// is kept (or settles the rate with its own duration); the second
    /// settles it with the step between them. Returns false when the frame
    /// was kept and nothing is to be encoded now. Called under `lock`.
    func settleFrameRate(planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>, format: AVPixelFormat,
                         width: Int32, height: Int32, pts: Int64, duration: Int64?, forceKeyframe: Bool) throws(WriterError) -> Bool {
        if let held = heldFrame {
            try openEncoder(frameTicks: pts - held.pts)
            heldFrame = nil
            try encodeHeld(held)
            return true
        }
        if let duration, duration > 0 {
            try openEncoder(frameTicks: duration)
            return true
        }
        heldFrame = try HeldFrame(planes: planes, strides: strides, format: format, width: width, height: height,
                                  pts: pts, forceKeyframe: forceKeyframe)
        return false
    }

    /// Settles the rate when no second frame came: a single frame (or none)
    /// is encoded at the provisional rate. Called under `lock`, before the
    /// encoder is flushed.
    func settleFrameRateAtEnd() throws(WriterError) {
        guard frameRatePending else { return }
        let held = heldFrame
        heldFrame = nil
        try openEncoder(frameTicks: ticks(Self.provisionalFrameDuration) ?? Int64(timeBase.den / 30))
        if let held { try encodeHeld(held) }
    }

    /// Opens the encoder for frames `frameTicks` apart (reopening the
    /// provisional one when the rate differs), gives the track its codec
    /// parameters and lets the header be written.
    private func openEncoder(frameTicks: Int64) throws(WriterError) {
        guard var settings = videoSettings, let writer else { throw .invalidState("the input has not been added to a writer") }
        let fastest = ticks(Self.fastestFrameDuration) ?? 1
        let frame = MediaTime(value: max(frameTicks, fastest), timescale: timeBase.den)
        settings.expectedFrameDuration = frame
        if videoEncoder == nil || frame != Self.provisionalFrameDuration.converted(toTimescale: timeBase.den) {
            do throws(WriterError) {
                videoEncoder = try VideoEncoder(settings: settings, timeBase: timeBase, globalHeader: globalHeader)
            } catch {
                throw writer.fail(error)
            }
        }
        guard let encoder = videoEncoder else { throw .invalidState("the input's encoder is closed") }
        videoSettings = settings
        expectedFrameTicks = frame.value
        frameRatePending = false
        try writer.supplyEncoderParameters(from: encoder.context, streamIndex: streamIndex)
    }

    private func encodeHeld(_ held: HeldFrame) throws(WriterError) {
        guard let encoder = videoEncoder else { throw .invalidState("the input's encoder is closed") }
        try PixelPlanes.with(held.frame) { planes, strides throws(WriterError) in
            try encoder.encode(planes: planes, strides: strides, format: AVPixelFormat(held.frame.pointee.format),
                               width: held.frame.pointee.width, height: held.frame.pointee.height, pts: held.pts,
                               forceKeyframe: held.forceKeyframe) { packet throws(WriterError) in try self.sendEncoded(packet) }
        }
    }
}

/// A copy of an input's first frame, kept until the frame rate is known.
final class HeldFrame {
    let frame: UnsafeMutablePointer<AVFrame>
    let pts: Int64
    let forceKeyframe: Bool

    init(planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>, format: AVPixelFormat,
         width: Int32, height: Int32, pts: Int64, forceKeyframe: Bool) throws(WriterError) {
        guard let frame = av_frame_alloc() else { throw .ffmpeg(FFmpegError(call: "av_frame_alloc", code: cffmpeg_averror(ENOMEM))) }
        frame.pointee.width = width
        frame.pointee.height = height
        frame.pointee.format = format.rawValue
        let allocated = av_frame_get_buffer(frame, 0)
        if allocated < 0 {
            var pointer: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&pointer)
            throw .ffmpeg(FFmpegError(call: "av_frame_get_buffer", code: allocated))
        }
        withUnsafeMutablePointer(to: &frame.pointee.data) { data in
            withUnsafeMutablePointer(to: &frame.pointee.linesize) { lines in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 4) { destination in
                    lines.withMemoryRebound(to: Int32.self, capacity: 4) { destinationStrides in
                        av_image_copy(destination, destinationStrides, UnsafeMutablePointer(mutating: planes), strides, format, width, height)
                    }
                }
            }
        }
        self.frame = frame
        self.pts = pts
        self.forceKeyframe = forceKeyframe
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&pointer)
    }
}
