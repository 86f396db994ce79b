import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Splits a raw MJPEG stream (JPEG images one after another, what
/// libavformat's `mjpeg` demuxer reads) into its images, each from its
/// start-of-image marker to its end-of-image marker.
///
/// Why: libavformat finds where an image ends with a parser that examines
/// every byte. Here marker segments are skipped by the lengths they state,
/// and only the entropy-coded data is searched, for 0xFF bytes, with memchr;
/// the file is read in large blocks. Replaying such a file then costs less
/// than demuxing it. The images come out as libavformat's demuxer gives them,
/// except that bytes between one image's end and the next one's start are
/// left out.
final class JPEGStreamReader {
    /// What reading one image gave.
    enum Result: Equatable {
        /// An image is in the packet.
        case image
        /// The stream ended (an image cut short by the end is given as it is first).
        case end
        case failed(String)
    }

    /// How much is read from the file at once.
    static let blockSize = 1 << 18
    /// A larger image than this is refused rather than buffered.
    static let maximumImageSize = 1 << 26

    private let io: UnsafeMutablePointer<AVIOContext>
    private var buffer: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes `[0, filled)` of `buffer` hold data read from the file.
    private var filled = 0
    /// Where the search for the next image starts.
    private var start = 0
    /// The image being delimited: where it starts, and how far it was walked.
    private var imageStart: Int?
    private var cursor = 0
    /// Whether `cursor` is in entropy-coded data, where 0xFF 0x00 and the
    /// restart markers are part of the data.
    private var inEntropyData = false
    private var atEnd = false

    /// A reader of `io` from where it stands.
    init(io: UnsafeMutablePointer<AVIOContext>) {
        self.io = io
        capacity = 2 * Self.blockSize
        buffer = .allocate(capacity: capacity)
    }

    deinit { buffer.deallocate() }

    /// Reads the next image into `packet` (which must be blank).
    func read(into packet: UnsafeMutablePointer<AVPacket>) -> Result {
        while true {
            if let image = nextImage() {
                return copy(image, into: packet)
            }
            if atEnd {
                // An image the stream cut short goes out as it is, as libavformat gives it.
                if let begin = imageStart, filled - begin > 2 {
                    imageStart = nil
                    start = filled
                    return copy(begin..<filled, into: packet)
                }
                return .end
            }
            if let failure = refill() { return .failed(failure) }
        }
    }

    private func copy(_ image: Range<Int>, into packet: UnsafeMutablePointer<AVPacket>) -> Result {
        let allocated = av_new_packet(packet, Int32(image.count))
        guard allocated >= 0 else { return .failed(FFmpegError(call: "av_new_packet", code: allocated).reason) }
        packet.pointee.data.update(from: buffer + image.lowerBound, count: image.count)
        return .image
    }

    /// Delimits the next image in what is buffered; nil when more must be read.
    private func nextImage() -> Range<Int>? {
        if imageStart == nil {
            guard let begin = findStartOfImage() else { return nil }
            imageStart = begin
            cursor = begin + 2
            inEntropyData = false
        }
        guard let begin = imageStart else { return nil }
        while true {
            if inEntropyData {
                guard let marker = findMarker(from: cursor) else { return nil }
                cursor = marker
                inEntropyData = false
            }
            guard cursor + 1 < filled else { return nil }
            guard buffer[cursor] == 0xFF else {
                // Not a marker where one belongs: damaged data. Look for the next marker.
                inEntropyData = true
                continue
            }
            let code = buffer[cursor + 1]
            switch code {
            case 0xFF:
                cursor += 1  // a fill byte before a marker
            case 0xD9:
                return finish(begin..<(cursor + 2))
            case 0xD8:
                // A new image starts before this one ended: this one ends there.
                return finish(begin..<cursor)
            case 0x01, 0xD0...0xD7:
                cursor += 2
                inEntropyData = true
            default:
                guard cursor + 3 < filled else { return nil }
                let length = Int(buffer[cursor + 2]) << 8 | Int(buffer[cursor + 3])
                guard length >= 2 else {
                    inEntropyData = true
                    cursor += 2
                    continue
                }
                guard cursor + 2 + length <= filled else { return nil }
                cursor += 2 + length
                // After a start-of-scan header comes entropy-coded data.
                inEntropyData = code == 0xDA
            }
        }
    }

    private func finish(_ image: Range<Int>) -> Range<Int> {
        imageStart = nil
        start = image.upperBound
        return image
    }

    /// Where the next 0xFF 0xD8 is, from `start`; nil (with `start` moved
    /// past what cannot begin one) when more must be read.
    private func findStartOfImage() -> Int? {
        let (found, resume) = findByte0xFF(from: start) { $0 == 0xD8 }
        if found == nil { start = resume }
        return found
    }

    /// Where the next marker in entropy-coded data is: a 0xFF followed by
    /// neither 0x00 (a stuffed byte), a restart marker, nor another 0xFF.
    /// Nil (with `cursor` moved on) when more must be read.
    private func findMarker(from position: Int) -> Int? {
        let (found, resume) = findByte0xFF(from: position) { $0 != 0x00 && $0 != 0xFF && !(0xD0...0xD7).contains($0) }
        if found == nil { cursor = resume }
        return found
    }

    /// The first 0xFF from `position` on that is followed by a byte
    /// `accepts`, searched with memchr; when none is buffered, where the
    /// search must go on once more is read (at a 0xFF that ends the buffer).
    private func findByte0xFF(from position: Int, followedBy accepts: (UInt8) -> Bool) -> (found: Int?, resume: Int) {
        var from = position
        while from < filled {
            guard let hit = memchr(buffer + from, 0xFF, filled - from) else { break }
            let at = hit.assumingMemoryBound(to: UInt8.self) - buffer
            guard at + 1 < filled else { return (nil, at) }
            if accepts(buffer[at + 1]) { return (at, at) }
            from = at + 1
        }
        return (nil, filled)
    }

    /// Moves what is still needed to the front of the buffer (growing it for
    /// an image larger than half of it), then reads a block after it.
    private func refill() -> String? {
        let keep = imageStart ?? start
        if keep > 0 {
            let remaining = filled - keep
            if remaining > 0 { memmove(buffer, buffer + keep, remaining) }
            filled = remaining
            start -= keep
            cursor = max(0, cursor - keep)
            if let begin = imageStart { imageStart = begin - keep }
        }
        if capacity - filled < Self.blockSize {
            guard capacity < Self.maximumImageSize else {
                return "an image is larger than \(Self.maximumImageSize >> 20) MB"
            }
            let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * 2)
            larger.update(from: buffer, count: filled)
            buffer.deallocate()
            buffer = larger
            capacity *= 2
        }
        let count = avio_read(io, buffer + filled, Int32(capacity - filled))
        if count == cffmpeg_AVERROR_EOF || count == 0 {
            atEnd = true
            return nil
        }
        if count < 0 { return FFmpegError(call: "avio_read", code: count).reason }
        filled += Int(count)
        return nil
    }
}
