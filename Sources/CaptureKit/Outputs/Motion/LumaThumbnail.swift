/// A small greyscale picture of a frame: the mean luma of each cell of a
/// grid about `LumaThumbnail.columns` wide, read straight from the frame's
/// luma samples (no conversion, no copy of the frame). What a motion
/// detector compares; averaging cells also smooths away sensor noise.
struct LumaThumbnail: Sendable {
    static let columns = 64

    let width: Int
    let height: Int
    /// Mean luma (0–255) of each cell, row by row.
    let values: [Float]

    /// Where the luma samples of a raw frame sit: the byte of the first, the
    /// step between neighbours in a row, and the row stride.
    private struct LumaLayout {
        var offset: Int
        var step: Int
        var stride: Int
    }

    /// Whether frames laid out as `layout` can be read: raw, with an 8-bit
    /// luma (or green) sample per pixel.
    static func canRead(_ layout: VideoSampleLayout) -> Bool {
        guard case .raw(let format, _) = layout else { return false }
        return lumaLayout(of: format.name, width: 1, bytesPerRow: nil) != nil
    }

    private static func lumaLayout(of formatName: String, width: Int, bytesPerRow: Int?) -> LumaLayout? {
        switch formatName {
        case "yuv420p", "yuvj420p", "yuv422p", "yuvj422p", "yuv444p", "yuvj444p", "yuv411p", "yuv410p",
             "nv12", "nv21", "nv16", "nv24", "nv42", "gray":
            return LumaLayout(offset: 0, step: 1, stride: bytesPerRow ?? width)
        case "yuyv422", "yvyu422":
            return LumaLayout(offset: 0, step: 2, stride: bytesPerRow ?? width * 2)
        case "uyvy422":
            return LumaLayout(offset: 1, step: 2, stride: bytesPerRow ?? width * 2)
        case "rgb24", "bgr24":
            // Green stands in for luma (most of it is green).
            return LumaLayout(offset: 1, step: 3, stride: bytesPerRow ?? width * 3)
        case "rgba", "bgra", "rgb0", "bgr0":
            return LumaLayout(offset: 1, step: 4, stride: bytesPerRow ?? width * 4)
        case "argb", "abgr", "0rgb", "0bgr":
            return LumaLayout(offset: 2, step: 4, stride: bytesPerRow ?? width * 4)
        default:
            return nil
        }
    }

    /// The thumbnail of `sample`; nil for frames it cannot read (compressed,
    /// or a pixel format without an 8-bit luma or green channel).
    init?(_ sample: VideoSampleBuffer) {
        guard case .raw(let format, let bytesPerRow) = sample.layout, sample.width > 0, sample.height > 0,
              let layout = Self.lumaLayout(of: format.name, width: sample.width, bytesPerRow: bytesPerRow) else { return nil }
        let bytes = sample.bytes
        guard bytes.count >= layout.stride * (sample.height - 1) + layout.offset + layout.step * sample.width - (layout.step - 1) else { return nil }
        let cell = max(1, sample.width / Self.columns)
        let width = sample.width / cell, height = sample.height / cell
        guard width > 0, height > 0 else { return nil }
        // About four pixels of four rows of each cell: enough for its mean,
        // and the reads a frame costs stay the same at any size.
        let skip = max(1, cell / 4)
        var values = [Float](repeating: 0, count: width * height)
        let perCell = Float(((cell + skip - 1) / skip) * ((cell + skip - 1) / skip))
        for row in 0..<height {
            for column in 0..<width {
                var sum = 0
                var y = row * cell
                while y < row * cell + cell {
                    var position = y * layout.stride + layout.offset + column * cell * layout.step
                    var x = 0
                    while x < cell {
                        sum += Int(bytes[position])
                        position += layout.step * skip
                        x += skip
                    }
                    y += skip
                }
                values[row * width + column] = Float(sum) / perCell
            }
        }
        self.width = width
        self.height = height
        self.values = values
    }

    init(width: Int, height: Int, values: [Float]) {
        self.width = width
        self.height = height
        self.values = values
    }
}
