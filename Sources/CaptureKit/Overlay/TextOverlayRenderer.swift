import Synchronization

/// Where a text overlay's box sits in a frame, in pixels, and the glyphs' scale.
package struct TextOverlayBox: Sendable, Hashable {
    package var x: Int
    package var y: Int
    package var width: Int
    package var height: Int
    /// Each font pixel is `scale` x `scale` frame pixels; glyphs are `7 * scale` high.
    package var scale: Int
    /// How many characters of the text fit across the frame (the rest is left out).
    package var characters: Int

    /// The glyph scale for frames `height` high: glyphs about a twentieth
    /// of the height, at least 14 pixels (scale 2).
    package static func scale(forFrameHeight height: Int) -> Int { max(2, (height + 70) / 140) }

    /// The box for `length` characters in a `width` x `height` frame at
    /// `position`, on even coordinates (so 4:2:0 chroma covers it exactly);
    /// nil when not even one character fits.
    package static func placing(length: Int, in width: Int, _ height: Int, at position: TextOverlay.Position) -> TextOverlayBox? {
        let scale = scale(forFrameHeight: height)
        let padding = 2 * scale, margin = 2 * scale, advance = OverlayFont.advance * scale
        let room = width - 2 * margin - 2 * padding + scale
        let characters = min(length, max(0, room / advance))
        let boxWidth = (characters * advance - scale + 2 * padding + 1) & ~1
        let boxHeight = (OverlayFont.rows * scale + 2 * padding + 1) & ~1
        guard characters > 0, boxHeight + 2 * margin <= height else { return nil }
        let left = position == .topLeft || position == .bottomLeft, top = position == .topLeft || position == .topRight
        let x = (left ? margin : width - margin - boxWidth) & ~1
        let y = (top ? margin : height - margin - boxHeight) & ~1
        return TextOverlayBox(x: x, y: y, width: boxWidth, height: boxHeight, scale: scale, characters: characters)
    }
}

/// Burns a `TextOverlay` into every frame of a camera: a dark box with
/// light text, drawn into a copy of the frame (capture buffers are lent and
/// read-only) taken from a pool, so that steady capture allocates nothing.
/// A camera's compressed frames (MJPEG, H.264, HEVC) are decoded to 4:2:0
/// first, so its outputs get raw frames (`outputFormat(for:)`); a damaged
/// one is left out and logged in `losses`. Raw formats it cannot draw on
/// (see `canDraw(_:)`) are refused. Set it as the input's `videoFrameProcessor`.
package final class TextOverlayRenderer: VideoFrameProcessor {
    package let overlay: TextOverlay
    /// The name `{camera}` stands for.
    package let cameraName: String

    /// The capture thread's cache: the pool for the frames' size, and the
    /// last text drawn as a mask of the box (1: text), made again only when
    /// the text or the frame's geometry changes.
    private struct State {
        var pool: RecyclingBufferPool?
        var text = ""
        var box: TextOverlayBox?
        var geometry = (0, 0)
        var mask: [UInt8] = []
        /// The decoder of a compressed camera's frames, made at its first
        /// frame and again when the camera's format changes (nil when none
        /// could be made for `decoderFormat`).
        var decoder: OverlayFrameDecoder?
        var decoderFormat: CaptureVideoFormat?
    }
    private let state = Mutex(State())
    /// Frames held by outputs at once, at most, before copies are allocated instead.
    private let poolSize: Int

    package init(overlay: TextOverlay, cameraName: String, poolSize: Int = 16) {
        self.overlay = overlay
        self.cameraName = cameraName
        self.poolSize = poolSize
    }

    /// Whether frames of `layout` get the text (raw frames of 8-bit YUV, RGB or grey).
    package static func canDraw(_ layout: VideoSampleLayout) -> Bool {
        guard case .raw(let format, _) = layout else { return false }
        return OverlayComponent.components(of: format) != nil
    }

    /// Compressed frames it left out, at their capture times: damaged ones,
    /// and those before a stream's first keyframe.
    package let losses: SampleLossLog? = SampleLossLog()

    /// Raw frames it can draw on keep their format; compressed frames it can
    /// decode become 4:2:0 (`yuv420p`) of the same size; others are refused.
    package func outputFormat(for format: CaptureVideoFormat) -> CaptureVideoFormat? {
        switch format.layout {
        case .raw:
            return Self.canDraw(format.layout) ? format : nil
        case .compressed(let codec):
            guard OverlayFrameDecoder.codecs.contains(codec), format.width > 0, format.height > 0 else { return nil }
            return CaptureVideoFormat(layout: .raw(OverlayFrameDecoder.format, bytesPerRow: nil), width: format.width, height: format.height,
                                      frameDuration: format.frameDuration, fourcc: "YU12")
        }
    }

    /// `frame` with the text drawn in: a raw frame as `process(_:)` does; a
    /// compressed one (of the source's `format`) decoded first, or nil
    /// when it gives no picture (before the first keyframe, damaged, or
    /// held back by the decoder), counted in `losses` unless held back.
    package func process(_ frame: VideoSampleBuffer, of format: CaptureVideoFormat) -> VideoSampleBuffer? {
        guard case .compressed = frame.layout else { return process(frame) }
        let text = overlay.text(at: frame.presentationTime, camera: cameraName)
        let outcome = state.withLock { state -> OverlayFrameDecoder.Outcome in
            if state.decoderFormat != format {
                // A camera opened again, maybe at another size or codec: a decoder of its own.
                state.decoderFormat = format
                state.decoder = OverlayFrameDecoder(format: format, poolSize: poolSize)
            }
            guard let decoder = state.decoder else { return .damaged }
            let box = prepare(&state, text: text, width: decoder.width, height: decoder.height)
            let mask = state.mask
            let components = OverlayComponent.components(of: OverlayFrameDecoder.format) ?? []
            return decoder.decode(frame) { memory in
                if let box { Self.draw(mask, box: box, components: components, planes: decoder.planes, into: memory) }
            }
        }
        switch outcome {
        case .decoded(let storage, let time, let earlier):
            if earlier > 0 { losses?.record(earlier, at: frame.presentationTime) }
            return VideoSampleBuffer(storage: storage, layout: .raw(OverlayFrameDecoder.format, bytesPerRow: nil), width: format.width,
                                     height: format.height, presentationTime: time, duration: frame.duration, sequence: frame.sequence)
        case .nothing:
            return nil
        case .beforeKeyframe, .damaged:
            losses?.record(1, at: frame.presentationTime)
            return nil
        }
    }

    /// `frame` with the text drawn in, if it is raw in a format it can draw on; else `frame` itself.
    package func process(_ frame: VideoSampleBuffer) -> VideoSampleBuffer {
        guard case .raw(let format, let bytesPerRow) = frame.layout,
              let components = OverlayComponent.components(of: format),
              let planes = ImagePlaneLayout.planes(format: format, width: frame.width, height: frame.height, bytesPerRow: bytesPerRow),
              let last = planes.last, last.offset + last.bytesPerRow * last.height <= frame.bytes.count,
              let source = frame.bytes.baseAddress else { return frame }
        let text = overlay.text(at: frame.presentationTime, camera: cameraName)
        let count = frame.bytes.count
        let storage = state.withLock { state -> SampleStorage? in
            guard let box = prepare(&state, text: text, width: frame.width, height: frame.height) else { return nil }
            if state.pool?.bufferSize != count { state.pool = RecyclingBufferPool(bufferSize: count, maximumCount: poolSize) }
            let mask = state.mask
            let draw = { (memory: UnsafeMutableRawBufferPointer) in
                memory.baseAddress!.copyMemory(from: source, byteCount: count)
                Self.draw(mask, box: box, components: components, planes: planes, into: memory)
            }
            if let buffer = state.pool?.take() {
                draw(buffer)
                return state.pool!.lend(buffer, count: count)
            }
            // Every pooled frame is held by an output: one of its own rather than waiting.
            return SampleStorage(count: count, fill: draw)
        }
        guard let storage else { return frame }
        return VideoSampleBuffer(storage: storage, layout: frame.layout, width: frame.width, height: frame.height,
                                 presentationTime: frame.presentationTime, duration: frame.duration, sequence: frame.sequence,
                                 isKeyframe: frame.isKeyframe, decodeTime: frame.decodeTime)
    }

    /// The box for `text` in a frame of this size, with the mask made for it.
    private func prepare(_ state: inout State, text: String, width: Int, height: Int) -> TextOverlayBox? {
        if text == state.text, state.geometry == (width, height) { return state.box }
        let bytes = Array(text.utf8)
        state.text = text
        state.geometry = (width, height)
        state.box = TextOverlayBox.placing(length: bytes.count, in: width, height, at: overlay.position)
        guard let box = state.box else { return nil }
        state.mask = Self.mask(bytes.prefix(box.characters), box: box)
        return box
    }

    /// The box's pixels, row by row: 1 where a glyph is lit.
    static func mask(_ text: ArraySlice<UInt8>, box: TextOverlayBox) -> [UInt8] {
        var mask = [UInt8](repeating: 0, count: box.width * box.height)
        let scale = box.scale, padding = 2 * box.scale
        for (index, byte) in text.enumerated() {
            for column in 0..<OverlayFont.columns {
                for row in 0..<OverlayFont.rows where OverlayFont.isLit(byte, column: column, row: row) {
                    let x = padding + (index * OverlayFont.advance + column) * scale, y = padding + row * scale
                    for line in y..<y + scale { mask.withUnsafeMutableBufferPointer { $0.baseAddress!.advanced(by: line * box.width + x).update(repeating: 1, count: scale) } }
                }
            }
        }
        return mask
    }

    /// Writes the box into each component of a frame laid out as `planes` in `memory`.
    static func draw(_ mask: [UInt8], box: TextOverlayBox, components: [OverlayComponent], planes: [ImagePlaneLayout],
                     into memory: UnsafeMutableRawBufferPointer) {
        let base = memory.baseAddress!.assumingMemoryBound(to: UInt8.self)
        mask.withUnsafeBufferPointer { mask in
            for component in components {
                let plane = planes[component.plane]
                let x0 = box.x >> component.shiftX, y0 = box.y >> component.shiftY
                let columns = min(box.width >> component.shiftX, plane.width - x0)
                let rows = min(box.height >> component.shiftY, plane.height - y0)
                guard columns > 0, rows > 0 else { continue }
                for row in 0..<rows {
                    let line = base + plane.offset + (y0 + row) * plane.bytesPerRow + x0 * component.step + component.offset
                    if !component.carriesText {
                        if component.step == 1 {
                            line.update(repeating: component.box, count: columns)
                        } else {
                            for column in 0..<columns { line[column * component.step] = component.box }
                        }
                    } else {
                        let lit = mask.baseAddress! + row * box.width
                        let (ink, dark, step) = (component.ink, component.box, component.step)
                        for column in 0..<columns { line[column * step] = lit[column] != 0 ? ink : dark }
                    }
                }
            }
        }
    }
}
