#if canImport(Glibc)
import Glibc
#endif

/// Draws the frames of the test pattern into packed image memory: colour
/// bars that slide `barStep` pixels per frame, a box that bounces around,
/// and the frame number in white digits on black at the top left, so that
/// a frame can be told apart from its neighbours by eye and by a program
/// (`counter(in:)`). Draws yuv420p, nv12, yuyv422 and rgb24.
final class TestPatternRenderer {
    let width: Int
    let height: Int
    let format: PixelFormat
    /// Bytes of one frame, rows packed.
    let frameSize: Int
    /// Pixels the bars slide per frame.
    let barStep: Int
    let counter: CounterLayout

    private struct Plane {
        let offset: Int
        let bytesPerRow: Int
        let rows: Int
    }

    private let kind: Kind
    private let planes: [Plane]
    /// The bar each column shows before sliding.
    private let barOfColumn: [UInt8]
    /// One row of each plane, drawn once per frame and copied down the plane.
    private var templates: [[UInt8]]

    private enum Kind { case yuv420p, nv12, yuyv422, rgb24 }

    /// A renderer, or nil for a format it does not draw or a size that format
    /// cannot have (the YUV formats need even widths and heights).
    init?(width: Int, height: Int, format: PixelFormat) {
        guard width > 0, height > 0 else { return nil }
        let kind: Kind
        switch format {
        case .yuv420p: kind = .yuv420p
        case .nv12: kind = .nv12
        case .yuyv422: kind = .yuyv422
        case .rgb24: kind = .rgb24
        default: return nil
        }
        if kind != .rgb24, width % 2 != 0 || height % 2 != 0 { return nil }
        self.width = width
        self.height = height
        self.format = format
        self.kind = kind
        switch kind {
        case .yuv420p:
            planes = [Plane(offset: 0, bytesPerRow: width, rows: height),
                      Plane(offset: width * height, bytesPerRow: width / 2, rows: height / 2),
                      Plane(offset: width * height * 5 / 4, bytesPerRow: width / 2, rows: height / 2)]
        case .nv12:
            planes = [Plane(offset: 0, bytesPerRow: width, rows: height),
                      Plane(offset: width * height, bytesPerRow: width, rows: height / 2)]
        case .yuyv422: planes = [Plane(offset: 0, bytesPerRow: width * 2, rows: height)]
        case .rgb24: planes = [Plane(offset: 0, bytesPerRow: width * 3, rows: height)]
        }
        frameSize = planes.reduce(0) { $0 + $1.bytesPerRow * $1.rows }
        barOfColumn = (0..<width).map { UInt8($0 * Self.bars.count / width) }
        templates = planes.map { [UInt8](repeating: 0, count: $0.bytesPerRow) }
        barStep = max(2, width / 160 & ~1)
        counter = CounterLayout(width: width, height: height)
    }

    // MARK: Drawing

    /// Draws frame `number` into `memory` (at least `frameSize` bytes).
    func render(frame number: Int64, into memory: UnsafeMutableRawBufferPointer) {
        precondition(memory.count >= frameSize)
        let base = memory.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let shift = Int(number % Int64(width)) * barStep % width
        drawBars(base, shift: shift)
        drawBox(base, number: number)
        drawCounter(base, number: number)
    }

    private func drawBars(_ base: UnsafeMutablePointer<UInt8>, shift: Int) {
        let bars = Self.bars
        for index in planes.indices {
            let plane = planes[index]
            templates[index].withUnsafeMutableBufferPointer { row in
                var column = shift
                func next() -> Colour {
                    let colour = bars[Int(barOfColumn[column])]
                    column += 1
                    if column == width { column = 0 }
                    return colour
                }
                switch (kind, index) {
                case (.yuv420p, 0), (.nv12, 0):
                    for x in 0..<width { row[x] = next().y }
                case (.yuv420p, _):
                    for x in 0..<(width / 2) {
                        let colour = next()
                        _ = next()
                        row[x] = index == 1 ? colour.u : colour.v
                    }
                case (.nv12, _):
                    for x in 0..<(width / 2) {
                        let colour = next()
                        _ = next()
                        row[2 * x] = colour.u
                        row[2 * x + 1] = colour.v
                    }
                case (.yuyv422, _):
                    for x in 0..<(width / 2) {
                        let left = next(), right = next()
                        row[4 * x] = left.y
                        row[4 * x + 1] = left.u
                        row[4 * x + 2] = right.y
                        row[4 * x + 3] = left.v
                    }
                case (.rgb24, _):
                    for x in 0..<width {
                        let colour = next()
                        row[3 * x] = colour.r
                        row[3 * x + 1] = colour.g
                        row[3 * x + 2] = colour.b
                    }
                }
                for y in 0..<plane.rows {
                    (base + plane.offset + y * plane.bytesPerRow).update(from: row.baseAddress!, count: plane.bytesPerRow)
                }
            }
        }
    }

    private func drawBox(_ base: UnsafeMutablePointer<UInt8>, number: Int64) {
        let size = max(2, min(width, height) / 6 & ~1)
        func bounce(_ travel: Int, speed: Int) -> Int {
            guard travel > 0 else { return 0 }
            let position = Int(number % Int64(2 * travel)) * speed % (2 * travel)
            return (position < travel ? position : 2 * travel - position) & ~1
        }
        fill(base, x: bounce(width - size, speed: 4), y: bounce(height - size, speed: 2), width: size, height: size, colour: Self.boxColour)
    }

    private func drawCounter(_ base: UnsafeMutablePointer<UInt8>, number: Int64) {
        let scale = counter.scale
        fill(base, x: counter.x, y: counter.y, width: counter.backgroundWidth, height: counter.backgroundHeight, colour: Self.black)
        var value = number % CounterLayout.modulus
        for place in stride(from: CounterLayout.digitCount - 1, through: 0, by: -1) {
            let digit = Int(value % 10)
            value /= 10
            for row in 0..<BitmapFont.rows {
                for column in 0..<BitmapFont.columns where BitmapFont.isLit(digit, column: column, row: row) {
                    let origin = counter.cell(digit: place, column: column, row: row)
                    fill(base, x: origin.x, y: origin.y, width: scale, height: scale, colour: Self.white)
                }
            }
        }
    }

    /// Fills a rectangle, clipped to the image; for the subsampled formats
    /// the edges are taken to even coordinates.
    private func fill(_ base: UnsafeMutablePointer<UInt8>, x: Int, y: Int, width rectWidth: Int, height rectHeight: Int, colour: Colour) {
        var left = max(x, 0), top = max(y, 0)
        var right = min(x + rectWidth, width), bottom = min(y + rectHeight, height)
        if kind != .rgb24 {
            left &= ~1
            top &= ~1
            right = (right + 1) & ~1
            bottom = (bottom + 1) & ~1
        }
        guard left < right, top < bottom else { return }
        let count = right - left
        switch kind {
        case .yuv420p, .nv12:
            for row in top..<bottom {
                (base + row * width + left).update(repeating: colour.y, count: count)
            }
            let chroma = base + width * height
            for row in (top / 2)..<(bottom / 2) {
                if kind == .yuv420p {
                    (chroma + row * width / 2 + left / 2).update(repeating: colour.u, count: count / 2)
                    (chroma + width * height / 4 + row * width / 2 + left / 2).update(repeating: colour.v, count: count / 2)
                } else {
                    let line = chroma + row * width + left
                    for pair in 0..<(count / 2) {
                        line[2 * pair] = colour.u
                        line[2 * pair + 1] = colour.v
                    }
                }
            }
        case .yuyv422:
            for row in top..<bottom {
                let line = base + row * width * 2 + left * 2
                for pair in 0..<(count / 2) {
                    line[4 * pair] = colour.y
                    line[4 * pair + 1] = colour.u
                    line[4 * pair + 2] = colour.y
                    line[4 * pair + 3] = colour.v
                }
            }
        case .rgb24:
            for row in top..<bottom {
                let line = base + row * width * 3 + left * 3
                for pixel in 0..<count {
                    line[3 * pixel] = colour.r
                    line[3 * pixel + 1] = colour.g
                    line[3 * pixel + 2] = colour.b
                }
            }
        }
    }

    // MARK: Colours

    struct Colour {
        let r, g, b: UInt8
        let y, u, v: UInt8

        /// An RGB colour and its BT.601 limited-range YCbCr.
        init(_ r: UInt8, _ g: UInt8, _ b: UInt8) {
            self.r = r
            self.g = g
            self.b = b
            let (red, green, blue) = (Double(r), Double(g), Double(b))
            func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
            y = clamp(16 + (65.481 * red + 128.553 * green + 24.966 * blue) / 255)
            u = clamp(128 + (-37.797 * red - 74.203 * green + 112 * blue) / 255)
            v = clamp(128 + (112 * red - 93.786 * green - 18.214 * blue) / 255)
        }
    }

    /// White, yellow, cyan, green, magenta, red, blue.
    static let bars = [Colour(255, 255, 255), Colour(255, 255, 0), Colour(0, 255, 255), Colour(0, 255, 0),
                       Colour(255, 0, 255), Colour(255, 0, 0), Colour(0, 0, 255)]
    static let boxColour = Colour(255, 128, 0)
    static let white = Colour(255, 255, 255)
    static let black = Colour(0, 0, 0)
}

/// Where the frame counter lies in a frame of a given size: eight digits of
/// the 5x7 font, each font pixel a `scale` x `scale` square, on a black
/// background one `scale` wider all round.
struct CounterLayout {
    static let digitCount = 8
    static let modulus: Int64 = 100_000_000

    let scale: Int
    let x: Int
    let y: Int

    init(width: Int, height: Int) {
        var scale = max(2, height / 120 & ~1)
        while scale > 2, (Self.digitCount * 6 + 1 + 4) * scale > width { scale -= 2 }
        self.scale = scale
        x = 2 * scale
        y = 2 * scale
    }

    var backgroundWidth: Int { (Self.digitCount * (BitmapFont.columns + 1) + 1) * scale }
    var backgroundHeight: Int { (BitmapFont.rows + 2) * scale }

    /// The top left corner of one font pixel of the digit at `digit` (0 is the leftmost).
    func cell(digit: Int, column: Int, row: Int) -> (x: Int, y: Int) {
        (x + scale + (digit * (BitmapFont.columns + 1) + column) * scale, y + scale + row * scale)
    }

    /// Reads the counter back from a frame's brightness at pixel (x, y);
    /// nil when a digit is unreadable or the counter does not fit the frame.
    func read(width: Int, height: Int, brightness: (_ x: Int, _ y: Int) -> UInt8) -> Int? {
        guard x + backgroundWidth <= width, y + backgroundHeight <= height else { return nil }
        var number = 0
        for place in 0..<Self.digitCount {
            let digit = BitmapFont.digit { column, row in
                let corner = cell(digit: place, column: column, row: row)
                return brightness(corner.x + scale / 2, corner.y + scale / 2) > 128
            }
            guard let digit else { return nil }
            number = number * 10 + digit
        }
        return number
    }
}

extension TestPatternRenderer {
    /// The frame number drawn in a test pattern frame (modulo 10⁸), read
    /// back from its pixels; nil for a sample that is not a readable test
    /// pattern frame in one of the formats it draws.
    static func counter(in sample: VideoSampleBuffer) -> Int? {
        guard case .raw(let format, let bytesPerRow) = sample.layout else { return nil }
        let bytes = sample.bytes
        let (bytesPerPixel, channel): (Int, Int)
        switch format {
        case .yuv420p, .nv12: (bytesPerPixel, channel) = (1, 0)
        case .yuyv422: (bytesPerPixel, channel) = (2, 0)
        case .rgb24: (bytesPerPixel, channel) = (3, 1)
        default: return nil
        }
        let stride = bytesPerRow ?? sample.width * bytesPerPixel
        guard bytes.count >= stride * sample.height else { return nil }
        return CounterLayout(width: sample.width, height: sample.height).read(width: sample.width, height: sample.height) { x, y in
            bytes[y * stride + x * bytesPerPixel + channel]
        }
    }
}
