/// How V4L2 pixel formats (fourccs) meet FFmpeg: the libavutil pixel format
/// an uncompressed fourcc is read as, the libavcodec decoder of a compressed
/// one, and the raw Bayer formats that only libv4l2's conversion makes usable.
enum V4L2PixelMapping {
    /// The libavutil pixel format whose memory layout equals the fourcc's,
    /// or nil when there is none (compressed, Bayer, or unknown formats).
    static func pixelFormat(for fourcc: FourCC) -> PixelFormat? {
        guard let name = pixelFormatNames[fourcc.code] else { return nil }
        return PixelFormat(name: name)
    }

    /// The libavutil name of `pixelFormat(for:)`, without asking libavutil.
    static func pixelFormatName(for fourcc: FourCC) -> String? {
        pixelFormatNames[fourcc.code]
    }

    /// The libavcodec decoder name for a compressed fourcc (`mjpeg`, `h264` …).
    static func codecName(for fourcc: FourCC) -> String? {
        codecNames[fourcc.code]
    }

    /// Whether the fourcc is an 8-bit Bayer mosaic, which libv4l2 converts
    /// to RGB or YUV.
    static func isBayer(_ fourcc: FourCC) -> Bool {
        bayer.contains(fourcc.code)
    }

    /// Whether the fourcc is usable only through libv4l2's conversion: Bayer
    /// mosaics, and YV12, whose chroma planes come in the order (V, U) that
    /// no libavutil format has.
    static func needsConversion(_ fourcc: FourCC) -> Bool {
        bayer.contains(fourcc.code) || fourcc == code("YV12")
    }

    /// Whether frames in the fourcc can be handed on as they come: an
    /// uncompressed layout libswscale reads, or a codec libavcodec decodes.
    static func isReadable(_ fourcc: FourCC) -> Bool {
        if codecNames[fourcc.code] != nil { return true }
        guard let format = pixelFormat(for: fourcc) else { return false }
        return format.isConvertible(asInput: true)
    }

    /// What libv4l2 is asked to convert an unreadable format to.
    static let conversionTarget = code("RGB3")

    private static func code(_ text: String) -> FourCC {
        // Every literal in this file is a fourcc as printed ("YUYV", "Y16 -BE").
        FourCC(parsing: text) ?? FourCC(code: 0)
    }

    /// The fourcc whose memory layout equals a libavutil pixel format (the
    /// first in V4L2's list where several do), or nil when V4L2 has none.
    static func fourcc(for format: PixelFormat) -> FourCC? {
        pixelFormatPairs.first { $0.1 == format.name }.map { code($0.0) }
    }

    /// The fourcc of a libavcodec codec (`MJPG` for mjpeg), or nil.
    static func fourcc(forCodec name: String) -> FourCC? {
        codecPairs.first { $0.1 == name }.map { code($0.0) }
    }

    /// V4L2 fourcc → libavutil pixel format name. The 32-bit RGB names follow
    /// the byte order in memory that videodev2.h gives for each fourcc.
    private static let pixelFormatNames: [UInt32: String] = Dictionary(uniqueKeysWithValues: pixelFormatPairs.map { (code($0.0).code, $0.1) })

    private static let pixelFormatPairs: [(String, String)] = [
        ("YUYV", "yuyv422"), ("YVYU", "yvyu422"), ("UYVY", "uyvy422"),
        ("NV12", "nv12"), ("NV21", "nv21"), ("NV16", "nv16"), ("NV24", "nv24"), ("NV42", "nv42"),
        ("YU12", "yuv420p"), ("422P", "yuv422p"), ("411P", "yuv411p"), ("YUV9", "yuv410p"),
        ("RGB3", "rgb24"), ("BGR3", "bgr24"),
        ("RGBP", "rgb565le"), ("RGBR", "rgb565be"), ("RGBO", "rgb555le"), ("RGBQ", "rgb555be"),
        ("AR24", "bgra"), ("XR24", "bgr0"), ("RA24", "abgr"), ("RX24", "0bgr"),
        ("AB24", "rgba"), ("XB24", "rgb0"), ("BA24", "argb"), ("BX24", "0rgb"),
        // The deprecated 32-bit formats whose fourth byte is undefined.
        ("BGR4", "bgr0"), ("RGB4", "0rgb"),
        ("GREY", "gray"), ("Y10 ", "gray10le"), ("Y12 ", "gray12le"), ("Y16 ", "gray16le"),
        ("Y16 -BE", "gray16be"),
    ]

    private static let codecNames: [UInt32: String] = Dictionary(uniqueKeysWithValues: codecPairs.map { (code($0.0).code, $0.1) })

    private static let codecPairs: [(String, String)] = [
        ("MJPG", "mjpeg"), ("JPEG", "mjpeg"), ("H264", "h264"), ("HEVC", "hevc"),
        ("MPG4", "mpeg4"), ("MPG2", "mpeg2video"), ("VP80", "vp8"), ("VP90", "vp9"),
    ]

    private static let bayer: Set<UInt32> = Set(["BA81", "GBRG", "GRBG", "RGGB"].map { code($0).code })
}
