/// Where the samples of each component of a pixel format sit, for drawing
/// a box with text: the values a dark box and light text take in each.
struct OverlayComponent: Sendable, Hashable {
    /// The plane, and the byte of the first sample in a row of it.
    var plane: Int
    var offset: Int
    /// Bytes from one sample of the component to the next in a row.
    var step: Int
    /// log2 of the subsampling across and down (chroma of 4:2:0 is 1, 1).
    var shiftX: Int
    var shiftY: Int
    /// The value in the box, and in the text's pixels.
    var box: UInt8
    var ink: UInt8

    /// Whether text shows in this component (else the whole box is `box`, as neutral chroma is).
    var carriesText: Bool { box != ink }

    /// The components of `format` to draw into, or nil for a format the
    /// overlay cannot draw on (compressed, Bayer, more than 8 bits a sample).
    static func components(of format: PixelFormat) -> [OverlayComponent]? {
        table[format]
    }

    private static let table: [PixelFormat: [OverlayComponent]] = {
        func luma(_ plane: Int = 0, offset: Int = 0, step: Int = 1, full: Bool) -> OverlayComponent {
            OverlayComponent(plane: plane, offset: offset, step: step, shiftX: 0, shiftY: 0, box: full ? 0 : 16, ink: full ? 255 : 235)
        }
        func chroma(_ plane: Int, offset: Int = 0, step: Int = 1, _ x: Int, _ y: Int) -> OverlayComponent {
            OverlayComponent(plane: plane, offset: offset, step: step, shiftX: x, shiftY: y, box: 128, ink: 128)
        }
        func planar(_ x: Int, _ y: Int, full: Bool) -> [OverlayComponent] { [luma(full: full), chroma(1, x, y), chroma(2, x, y)] }
        func semiPlanar(_ y: Int) -> [OverlayComponent] { [luma(full: false), chroma(1, step: 2, 1, y), chroma(1, offset: 1, step: 2, 1, y)] }
        func packedYUV(luma lumaOffset: Int, chroma first: Int) -> [OverlayComponent] {
            [luma(offset: lumaOffset, step: 2, full: false), chroma(0, offset: first, step: 4, 1, 0), chroma(0, offset: first + 2, step: 4, 1, 0)]
        }
        func rgb(bytes: Int, first: Int) -> [OverlayComponent] {
            (first..<first + 3).map { OverlayComponent(plane: 0, offset: $0, step: bytes, shiftX: 0, shiftY: 0, box: 0, ink: 255) }
        }
        var table: [PixelFormat: [OverlayComponent]] = [:]
        func add(_ name: String, _ components: [OverlayComponent]) {
            if let format = PixelFormat(name: name) { table[format] = components }
        }
        add("yuv420p", planar(1, 1, full: false))
        add("yuvj420p", planar(1, 1, full: true))
        add("yuv422p", planar(1, 0, full: false))
        add("yuvj422p", planar(1, 0, full: true))
        add("yuv444p", planar(0, 0, full: false))
        add("yuvj444p", planar(0, 0, full: true))
        add("nv12", semiPlanar(1))
        add("nv21", semiPlanar(1))
        add("nv16", semiPlanar(0))
        add("yuyv422", packedYUV(luma: 0, chroma: 1))
        add("yvyu422", packedYUV(luma: 0, chroma: 1))
        add("uyvy422", packedYUV(luma: 1, chroma: 0))
        add("rgb24", rgb(bytes: 3, first: 0))
        add("bgr24", rgb(bytes: 3, first: 0))
        for name in ["rgba", "bgra", "rgb0", "bgr0"] { add(name, rgb(bytes: 4, first: 0)) }
        for name in ["argb", "abgr", "0rgb", "0bgr"] { add(name, rgb(bytes: 4, first: 1)) }
        add("gray", [luma(full: true)])
        return table
    }()
}
