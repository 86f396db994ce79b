import CFFmpeg

/// Encodes one camera's frames once, for every sink that records or sends
/// them with the same settings: raw frames (or a camera's compressed ones,
/// decoded first) in, compressed frames out, each with the capture time of
/// the picture it holds. Frames come out in the order they went in, never
/// reordered (see `canShare`), so that a sink can begin or end at any
/// keyframe it asks for and needs no decode times.
///
/// H.264 and HEVC carry their parameter sets in band, in front of each
/// keyframe, so that every container and every sink that starts at a
/// keyframe finds them there (a movie's header takes them from its first
/// keyframe). Used on one thread at a time (its compression stage's).
final class VideoCompressor {
    let settings: VideoOutputSettings
    /// libavcodec's name of what comes out (`h264`, `hevc`, `mjpeg`).
    let codecName: String
    private var encoder: VideoEncoder
    /// Whether the encoder was opened at the rate of the frames it is fed:
    /// settings that name no frame duration (a camera whose driver lists no
    /// frame interval) open it at the provisional rate, and the first
    /// frame's own duration, if it has one, reopens it at that rate. Rate
    /// control told nothing spends a bit rate on the time base's 90000
    /// frames a second and leaves every picture grey.
    private var rateSettled: Bool
    private var decoder: CompressedFrameDecoder?
    private var decoderCodec: String?
    private let decoderConfiguration: [UInt8]
    /// What each picture inside the encoder was, by its time in encoder ticks.
    private var pending: [Int64: (time: MediaTime, duration: MediaTime?, sequence: UInt64)] = [:]
    private var lastTicks: Int64?
    private static let timescale: Int32 = 90000

    /// What became of a frame handed to `encode`.
    enum Outcome {
        case encoded, refused, beforeKeyframe
    }

    /// Whether frames encoded with `settings` come out in order and at once,
    /// so that sinks can share them: H.264 and HEVC tuned for zero latency
    /// (what a live recording asks for) and MJPEG. Settings that name
    /// B-frames or raw encoder parameters are left to an encoder of their own.
    static func canShare(_ settings: VideoOutputSettings) -> Bool {
        let ownParameters = ["bf", "b-pyramid", "x264-params", "x264opts", "x265-params", "rc-lookahead"]
        guard !settings.encoderOptions.keys.contains(where: ownParameters.contains) else { return false }
        switch settings.codec {
        case .mjpeg: return true
        case .h264, .hevc: return settings.encoderOptions["tune"]?.split(separator: ",").contains("zerolatency") == true
        case .vp9, .av1: return false
        }
    }

    /// Opens the encoder; `decoding` names the codec and configuration of
    /// a camera's compressed frames, which are decoded first.
    init(settings: VideoOutputSettings, decodingConfiguration: [UInt8] = []) throws(WriterError) {
        self.settings = settings
        rateSettled = settings.expectedFrameDuration.map { $0.isNumeric && $0 > .zero } ?? false
        var opening = settings
        if !rateSettled { opening.expectedFrameDuration = AssetWriterInput.provisionalFrameDuration }
        encoder = try Self.open(opening)
        codecName = String(cString: avcodec_get_name(encoder.context.pointee.codec_id))
        decoderConfiguration = decodingConfiguration
    }

    var encoderName: String { encoder.encoderName }

    private static func open(_ settings: VideoOutputSettings) throws(WriterError) -> VideoEncoder {
        let encoder = try VideoEncoder(settings: settings, timeBase: AVRational(num: 1, den: Self.timescale), globalHeader: false)
        guard encoder.context.pointee.has_b_frames == 0 else {
            throw .invalidSettings("\(encoder.encoderName) reorders frames with these settings; a shared encoder cannot")
        }
        return encoder
    }

    /// Reopens the provisional encoder at the first frame's rate (see `rateSettled`).
    private func settleRate(frameDuration: MediaTime?) throws(WriterError) {
        rateSettled = true
        guard let frameDuration, frameDuration.isNumeric, frameDuration > .zero else { return }
        let frame = max(frameDuration, AssetWriterInput.fastestFrameDuration)
        guard frame != AssetWriterInput.provisionalFrameDuration else { return }
        var opening = settings
        opening.expectedFrameDuration = frame
        encoder = try Self.open(opening)
    }

    /// Encodes `sample`; `wantsKeyframe` is asked, with the picture's time,
    /// right before each picture is encoded. Each compressed frame that
    /// comes out goes to `deliver`. A picture out of time order is refused;
    /// a camera's compressed frame before its first keyframe cannot be decoded.
    func encode(_ sample: VideoSampleBuffer, wantsKeyframe: (MediaTime) -> Bool,
                deliver: (VideoSampleBuffer) -> Void) throws(WriterError) -> Outcome {
        switch sample.layout {
        case .raw(let format, let bytesPerRow):
            guard format.raw != AV_PIX_FMT_NONE, sws_isSupportedInput(format.raw) > 0 else {
                throw .invalidSettings("frames in \(format) cannot be converted")
            }
            let encoded = try PixelPlanes.with(sample.bytes, format: format, width: sample.width, height: sample.height,
                                               bytesPerRow: bytesPerRow) { planes, strides throws(WriterError) in
                try encodePicture(planes: planes, strides: strides, format: format.raw, width: Int32(sample.width),
                                  height: Int32(sample.height), time: sample.presentationTime, duration: sample.duration,
                                  sequence: sample.sequence, wantsKeyframe: wantsKeyframe, deliver: deliver)
            }
            return encoded ? .encoded : .refused
        case .compressed(let codec):
            if decoder == nil || decoderCodec != codec {
                decoder = try CompressedFrameDecoder(codecName: codec, configuration: decoderConfiguration)
                decoderCodec = codec
            }
            guard let decoder, decoder.canStart(at: sample.isKeyframe) else { return .beforeKeyframe }
            var encoded = true
            try decoder.decode(sample.bytes, time: sample.presentationTime) { frame, time throws(WriterError) in
                let taken = try PixelPlanes.with(frame) { planes, strides throws(WriterError) in
                    try encodePicture(planes: planes, strides: strides, format: AVPixelFormat(frame.pointee.format),
                                      width: frame.pointee.width, height: frame.pointee.height, time: time,
                                      duration: sample.duration, sequence: sample.sequence, wantsKeyframe: wantsKeyframe, deliver: deliver)
                }
                encoded = encoded && taken
            }
            return encoded ? .encoded : .refused
        }
    }

    /// Ends the stream: what the decoder and the encoder still hold comes out.
    func flush(deliver: (VideoSampleBuffer) -> Void) throws(WriterError) {
        if let decoder {
            try decoder.flush { frame, time throws(WriterError) in
                _ = try PixelPlanes.with(frame) { planes, strides throws(WriterError) in
                    try encodePicture(planes: planes, strides: strides, format: AVPixelFormat(frame.pointee.format),
                                      width: frame.pointee.width, height: frame.pointee.height, time: time, duration: nil,
                                      sequence: 0, wantsKeyframe: { _ in false }, deliver: deliver)
                }
            }
        }
        try encoder.flush { packet throws(WriterError) in self.deliver(packet, to: deliver) }
    }

    private func encodePicture(planes: UnsafePointer<UnsafePointer<UInt8>?>, strides: UnsafePointer<Int32>, format: AVPixelFormat,
                               width: Int32, height: Int32, time: MediaTime, duration: MediaTime?, sequence: UInt64,
                               wantsKeyframe: (MediaTime) -> Bool, deliver: (VideoSampleBuffer) -> Void) throws(WriterError) -> Bool {
        let converted = time.converted(toTimescale: Self.timescale)
        guard converted.isNumeric else { return false }
        let ticks = converted.value
        if let lastTicks, ticks <= lastTicks { return false }
        if !rateSettled { try settleRate(frameDuration: duration) }
        lastTicks = ticks
        pending[ticks] = (time, duration, sequence)
        try encoder.encode(planes: planes, strides: strides, format: format, width: width, height: height, pts: ticks,
                           forceKeyframe: wantsKeyframe(time)) { packet throws(WriterError) in self.deliver(packet, to: deliver) }
        return true
    }

    private func deliver(_ packet: UnsafeMutablePointer<AVPacket>, to deliver: (VideoSampleBuffer) -> Void) {
        guard let picture = pending.removeValue(forKey: packet.pointee.pts), packet.pointee.size > 0, let data = packet.pointee.data else { return }
        let storage = SampleStorage(copying: UnsafeRawBufferPointer(start: data, count: Int(packet.pointee.size)))
        deliver(VideoSampleBuffer(storage: storage, layout: .compressed(codecName: codecName), width: settings.width, height: settings.height,
                                  presentationTime: picture.time, duration: picture.duration, sequence: picture.sequence,
                                  isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0))
    }
}
