/// The pixel formats the test pattern draws, and the short names
/// (V4L2 fourccs) that virtual sources and requests use for them.
enum VirtualPixelFormat {
    /// The formats the test pattern draws, by the fourcc it reports.
    static let drawable: [(fourcc: String, format: PixelFormat)] = [
        ("YU12", .yuv420p), ("NV12", .nv12), ("YUYV", .yuyv422), ("RGB3", .rgb24),
    ]

    /// A pixel format from a libavutil name (`yuv420p`) or a fourcc (`YUYV`, `NV12`, `RGB3`, `YU12`).
    static func pixelFormat(named name: String) -> PixelFormat? {
        if let entry = drawable.first(where: { $0.fourcc == name.uppercased() }) { return entry.format }
        return PixelFormat(name: name.lowercased())
    }

    /// The fourcc of a pixel format, or its libavutil name when it has none here.
    static func fourcc(for format: PixelFormat) -> String {
        drawable.first(where: { $0.format == format })?.fourcc ?? format.name
    }

    /// The V4L2 fourcc of a compressed format.
    static func fourcc(forCodec name: String) -> String {
        switch name {
        case "mjpeg": return "MJPG"
        case "h264": return "H264"
        case "hevc": return "HEVC"
        default: return name.uppercased()
        }
    }
}
