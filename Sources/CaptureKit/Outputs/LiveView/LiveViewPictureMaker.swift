import CFFmpeg

/// Which frames a view at a lower rate than the camera's shows: the first,
/// then each that comes once the view's interval has (nearly) passed, so
/// that 30 fps shown at 15 takes every other frame despite timestamp jitter.
struct LiveViewSchedule {
    /// Seconds between pictures; nil: every frame.
    let interval: Double?
    private var due: Double?

    init(frameRate: Double?) {
        interval = frameRate.map { 1 / $0 }
    }

    mutating func admits(_ time: MediaTime) -> Bool {
        guard let interval else { return true }
        let seconds = time.seconds
        // A quarter interval early still counts: a frame stamped a little
        // before its tick is the one nearest it.
        if let due, seconds < due - interval / 4 { return false }
        // After a gap (a camera that stalled) the schedule starts again from this frame.
        if let due, seconds < due + interval {
            self.due = due + interval
        } else {
            due = seconds + interval
        }
        return true
    }
}

/// Makes a view's JPEG pictures from a camera's frames, on the view's own
/// thread: a camera's JPEG at the view's size is handed on as it is; other
/// frames are decoded if compressed, scaled to the view's size with
/// libswscale and encoded. Owned by that thread.
final class LiveViewPictureMaker {
    let width: Int
    let height: Int
    let quality: Int
    /// Whether the last picture was the camera's own JPEG.
    private(set) var passedThrough = false
    /// The rate, for inter-coded frames (chosen after decoding); the view chooses the others as they are captured.
    private var schedule: LiveViewSchedule
    private var encoder: JPEGEncoder?
    private var converter: PixelConverter?
    private var decoder: CompressedFrameDecoder?
    private var decoderCodec: String?
    private var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()

    init(width: Int, height: Int, frameRate: Double?, quality: Int) {
        self.width = width
        self.height = height
        self.quality = quality
        schedule = LiveViewSchedule(frameRate: frameRate)
    }

    deinit { av_frame_free(&frame) }

    /// Whether frames of `layout` are all needed (inter-coded video: the
    /// decoder needs every frame, and the rate is chosen after decoding),
    /// or may be chosen before they reach the view's thread.
    static func decodesEveryFrame(_ layout: VideoSampleLayout) -> Bool {
        if case .compressed(let codec) = layout { return codec != "mjpeg" }
        return false
    }

    /// Forgets a decoder's state: frames were lost, and an inter-coded
    /// stream starts again at its next keyframe.
    func restartDecoding() {
        decoder = nil
        decoderCodec = nil
    }

    /// The pictures `sample` gives (none while a decoder waits for a
    /// keyframe or holds a frame back, or the rate leaves it out).
    func pictures(of sample: VideoSampleBuffer) throws(WriterError) -> [LiveViewFrame] {
        switch sample.layout {
        case .compressed("mjpeg") where sample.width == width && sample.height == height:
            passedThrough = true
            return [LiveViewFrame(jpeg: Array(sample.bytes.bindMemory(to: UInt8.self)), width: width, height: height,
                                  captureTime: sample.presentationTime, sequence: sample.sequence)]
        case .compressed(let codec):
            passedThrough = false
            if decoderCodec != codec {
                decoder = try CompressedFrameDecoder(codecName: codec)
                decoderCodec = codec
            }
            guard let decoder, decoder.canStart(at: sample.isKeyframe) else { return [] }
            var pictures: [LiveViewFrame] = []
            let selectsAfterDecoding = Self.decodesEveryFrame(sample.layout)
            try decoder.decode(sample.bytes, time: sample.presentationTime) { picture, time throws(WriterError) in
                if selectsAfterDecoding && !schedule.admits(time) { return }
                pictures.append(try encode(picture, time: time, sequence: sample.sequence))
            }
            return pictures
        case .raw(let format, let bytesPerRow):
            passedThrough = false
            guard let frame else { throw .ffmpeg(FFmpegError(call: "av_frame_alloc", code: cffmpeg_averror(ENOMEM))) }
            return try PixelPlanes.withFrame(frame, over: sample.bytes, format: format, width: sample.width, height: sample.height,
                                             bytesPerRow: bytesPerRow) { frame throws(WriterError) in
                [try encode(frame, time: sample.presentationTime, sequence: sample.sequence)]
            }
        }
    }

    private func encode(_ source: UnsafeMutablePointer<AVFrame>, time: MediaTime, sequence: UInt64) throws(WriterError) -> LiveViewFrame {
        if converter == nil { converter = try PixelConverter(pixelFormat: ImageFormat.jpeg.pixelFormat, width: width, height: height, scaling: .fast) }
        if encoder == nil { encoder = try JPEGEncoder(width: width, height: height, quality: quality) }
        let picture = try converter!.convert(frame: source)
        return LiveViewFrame(jpeg: try encoder!.encode(picture), width: width, height: height, captureTime: time, sequence: sequence)
    }
}
