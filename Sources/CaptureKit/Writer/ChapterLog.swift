/// The chapters of a fragmented recording that becomes a regular movie,
/// kept in its file while it is written, so that `MovieRepair` gives a
/// killed recording the chapters a clean finish would have written.
///
/// The writer keeps it in a 'free' box right after the session log (see
/// `SessionLog`), rewritten in place as chapters are added; readers skip
/// it, and a finish turns it into unused bytes with the rest of the head.
/// Fixed size: chapters that do not fit are left out, and the log says so.
///
/// Layout of the box's payload (big-endian): 16 bytes magic
/// `capctl:chapters1`; UInt32 chapter count, UInt32 flags (bit 0: chapters
/// were left out); per chapter Int64 start value, Int32 start time scale
/// (on the file's timeline), UInt8 title length, the title's UTF-8 bytes.
/// The rest is zero.
struct ChapterLog: Equatable {
    struct Point: Equatable {
        var time: MediaTime
        var title: String
    }

    static let boxSize = 8192
    static let magic = Array("capctl:chapters1".utf8)
    private static let headerSize = 16 + 8

    var points: [Point] = []

    /// The payload of the 'free' box: exactly `boxSize - 8` bytes.
    func payload() -> [UInt8] {
        var entries = [UInt8]()
        var kept = 0
        for point in points where point.time.isNumeric {
            let title = Array(point.title.utf8.prefix(Chapters.maxTitleBytes))
            guard Self.headerSize + entries.count + 13 + title.count <= Self.boxSize - 8 else { break }
            BigEndian.append(UInt64(bitPattern: point.time.value), to: &entries)
            BigEndian.append(UInt32(bitPattern: point.time.timescale), to: &entries)
            entries.append(UInt8(title.count))
            entries += title
            kept += 1
        }
        var bytes = Self.magic
        BigEndian.append(UInt32(kept), to: &bytes)
        BigEndian.append(UInt32(kept < points.count ? 1 : 0), to: &bytes)
        bytes += entries
        bytes += [UInt8](repeating: 0, count: Self.boxSize - 8 - bytes.count)
        return bytes
    }

    /// The whole 'free' box.
    func box() -> [UInt8] {
        var bytes = [UInt8]()
        BigEndian.append(UInt32(Self.boxSize), to: &bytes)
        bytes += Array("free".utf8)
        return bytes + payload()
    }

    init(points: [Point] = []) { self.points = points }

    /// Reads a log from a 'free' box's payload; nil when it holds none.
    init?(payload: [UInt8]) {
        guard payload.count >= Self.headerSize, Array(payload.prefix(16)) == Self.magic else { return nil }
        let count = Int(BigEndian.uint32(payload, at: 16))
        var offset = Self.headerSize
        for _ in 0..<count {
            guard offset + 13 <= payload.count else { return nil }
            let value = Int64(bitPattern: BigEndian.uint64(payload, at: offset))
            let scale = Int32(bitPattern: BigEndian.uint32(payload, at: offset + 8))
            let length = Int(payload[offset + 12])
            offset += 13
            guard scale > 0, offset + length <= payload.count else { return nil }
            points.append(Point(time: MediaTime(value: value, timescale: scale),
                                title: String(decoding: payload[offset..<(offset + length)], as: UTF8.self)))
            offset += length
        }
    }
}
