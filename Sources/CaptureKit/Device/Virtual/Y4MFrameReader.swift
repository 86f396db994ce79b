import CFFmpeg

/// Reads the frames of an opened Y4M file straight into the caller's
/// buffers.
///
/// Why: libavformat's demuxer allocates a new packet for every frame (4 MB
/// for 1080p 4:2:2), on the capture thread, and the writer frees it on its
/// own; glibc keeps much of that churn resident. Reading into a few recycled
/// buffers keeps a replayed file's memory at those buffers.
struct Y4MFrameReader {
    /// What reading one frame gave.
    enum Result: Equatable {
        case frame
        /// The file ended (a last frame cut short ends it too, as for libavformat).
        case end
        case failed(String)
    }

    private static let magic = Array("FRAME".utf8)
    /// The longest `FRAME` line with parameters that libavformat accepts.
    static let maximumHeaderLength = 80

    private let context: UnsafeMutablePointer<AVFormatContext>
    private let streamIndex: Int32
    let frameSize: Int

    /// A reader of `context`'s frames of `frameSize` bytes, rewound to the
    /// first frame (opening the file read ahead to learn its streams); nil
    /// when the file cannot be rewound.
    init?(context: UnsafeMutablePointer<AVFormatContext>, streamIndex: Int32, frameSize: Int) {
        guard context.pointee.pb != nil,
              av_seek_frame(context, streamIndex, 0, AVSEEK_FLAG_BACKWARD) >= 0 else { return nil }
        self.context = context
        self.streamIndex = streamIndex
        self.frameSize = frameSize
    }

    /// Reads the next frame's `frameSize` bytes into `buffer`.
    func read(into buffer: UnsafeMutableRawPointer) -> Result {
        guard let io = context.pointee.pb else { return .failed("the file is not open") }
        var length = 0
        while true {
            let byte = avio_r8(io)
            if io.pointee.error < 0 { return .failed(FFmpegError(call: "avio_r8", code: io.pointee.error).reason) }
            if io.pointee.eof_reached != 0 { return .end }
            if byte == 0x0A { break }
            if length < Self.magic.count, byte != Int32(Self.magic[length]) { return .failed("a frame does not start with FRAME") }
            length += 1
            if length >= Self.maximumHeaderLength { return .failed("a frame header is longer than \(Self.maximumHeaderLength) bytes") }
        }
        guard length >= Self.magic.count else { return .failed("a frame does not start with FRAME") }
        var done = 0
        while done < frameSize {
            let count = avio_read(io, buffer.advanced(by: done).assumingMemoryBound(to: UInt8.self), Int32(frameSize - done))
            if count == cffmpeg_AVERROR_EOF || (count == 0 && io.pointee.eof_reached != 0) { return .end }
            if count < 0 { return .failed(FFmpegError(call: "avio_read", code: count).reason) }
            done += Int(count)
        }
        return .frame
    }
}
