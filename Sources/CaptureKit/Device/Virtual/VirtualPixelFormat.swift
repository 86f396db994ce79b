/// The pixel formats the test pattern draws, and the short names
/// (V4L2 fourccs) that virtual sources and requests use for them.
enum VirtualPixelFormat {
    /// The formats the test pattern draws, by the fourcc it reports, with
    /// libavutil's name for the format and V4L2's description of the fourcc.
    /// The names are written out (not asked of libavutil) so that listing the
    /// test pattern's formats does not load FFmpeg's libraries.
    static let drawable: [(fourcc: String, format: PixelFormat, name: String, description: String)] = [
        ("YU12", .yuv420p, "yuv420p", "Planar YUV 4:2:0"), ("NV12", .nv12, "nv12", "Y/UV 4:2:0"),
        ("YUYV", .yuyv422, "yuyv422", "YUYV 4:2:2"), ("RGB3", .rgb24, "rgb24", "24-bit RGB 8-8-8"),
    ]

    /// A pixel format from a libavutil name (`yuv420p`) or a fourcc (`YUYV`, `NV12`, `RGB3`, `YU12`).
    static func pixelFormat(named name: String) -> PixelFormat? {
        if let entry = drawable.first(where: { $0.fourcc == name.uppercased() || $0.name == name.lowercased() }) { return entry.format }
        return PixelFormat(name: name.lowercased())
    }

    /// The fourcc of a pixel format, or its libavutil name when it has none here.
    static func fourcc(for format: PixelFormat) -> String {
        drawable.first(where: { $0.format == format })?.fourcc ?? format.name
    }

    /// The V4L2 fourcc of a compressed format (`MJPG`, `H264`, `HEVC`), else the codec's name in capitals.
    static func fourcc(forCodec name: String) -> String {
        V4L2PixelMapping.fourcc(forCodec: name)?.description ?? name.uppercased()
    }
}
