import CFFmpeg

/// Decodes a camera's compressed frames (MJPEG, H.264, HEVC) into raw
/// 4:2:0 frames an overlay can draw into, in memory from a pool, so that
/// steady capture allocates no frame memory. Each decoded frame keeps the
/// capture time the decoder carried for it. Used on one capture thread.
final class OverlayFrameDecoder {
    /// What compressed frames become.
    static let format = PixelFormat.yuv420p
    /// The codecs it decodes.
    static let codecs: Set<String> = ["mjpeg", "h264", "hevc"]

    /// The format it decodes (the source's).
    let sourceFormat: CaptureVideoFormat
    let width: Int
    let height: Int
    let planes: [ImagePlaneLayout]
    let byteCount: Int
    private let decoder: CompressedFrameDecoder
    private let converter: PixelConverter
    private let pool: RecyclingBufferPool

    /// A decoder for frames of `format` (compressed), or nil when it cannot take them.
    init?(format: CaptureVideoFormat, poolSize: Int) {
        guard case .compressed(let codec) = format.layout, Self.codecs.contains(codec),
              let planes = ImagePlaneLayout.planes(format: Self.format, width: format.width, height: format.height, bytesPerRow: nil),
              let last = planes.last,
              let decoder = try? CompressedFrameDecoder(codecName: codec, configuration: format.codecConfiguration),
              let converter = try? PixelConverter(pixelFormat: Self.format, width: format.width, height: format.height) else { return nil }
        sourceFormat = format
        width = format.width
        height = format.height
        self.planes = planes
        byteCount = last.offset + last.bytesPerRow * last.height
        self.decoder = decoder
        self.converter = converter
        pool = RecyclingBufferPool(bufferSize: byteCount, maximumCount: poolSize)
    }

    /// What decoding `frame` gave.
    enum Outcome {
        /// A picture and its capture time; `earlier` pictures came out of
        /// the same frame before it and are left out (a decoder that held
        /// frames back, which a camera's decoder does not).
        case decoded(SampleStorage, MediaTime, earlier: Int)
        /// Nothing came out: the decoder holds the frame back.
        case nothing
        /// A frame before the stream's first keyframe: it cannot be decoded.
        case beforeKeyframe
        /// The frame could not be decoded (damaged).
        case damaged
    }

    /// Decodes `frame`, `draw` then changes the picture in place.
    func decode(_ frame: VideoSampleBuffer, draw: (UnsafeMutableRawBufferPointer) -> Void) -> Outcome {
        guard decoder.canStart(at: frame.isKeyframe) else { return .beforeKeyframe }
        var outcome = Outcome.nothing
        var pictures = 0
        do {
            try decoder.decode(frame.bytes, time: frame.presentationTime) { picture, time throws(WriterError) in
                let storage: SampleStorage
                if let buffer = pool.take() {
                    storage = pool.lend(buffer, count: byteCount)
                    try converter.convert(frame: picture, into: buffer, planes: planes)
                    draw(buffer)
                } else {
                    // Every pooled frame is held by an output: one of its own rather than waiting.
                    var failure: WriterError?
                    storage = SampleStorage(count: byteCount) { memory in
                        do throws(WriterError) {
                            try converter.convert(frame: picture, into: memory, planes: planes)
                            draw(memory)
                        } catch {
                            failure = error
                        }
                    }
                    if let failure { throw failure }
                }
                outcome = .decoded(storage, time, earlier: pictures)
                pictures += 1
            }
        } catch {
            return .damaged
        }
        return outcome
    }
}
