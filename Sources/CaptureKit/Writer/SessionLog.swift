/// What a fragmented recording needs to be made regular later with the same
/// edit lists its writer would have written: its sessions (a pause ends one
/// and a resume starts the next) and, per track, the decode time of its
/// first sample, on the timeline its samples are stamped with.
///
/// The writer keeps it in a 'free' box right after the movie box at the
/// head of the file (readers skip 'free' boxes), rewritten in place as
/// sessions start and end, so that `MovieRepair` can lay a killed
/// recording's pauses out as edits. Fixed size: when more sessions come than
/// fit, the log says so and repair falls back to one edit per track.
///
/// Layout of the box's payload (big-endian): 16 bytes magic
/// `capctl:sessions1`; UInt32 track count, UInt32 session count, UInt32
/// flags (bit 0: sessions were left out); per track Int64 first decode time
/// in its media time scale (Int64.min: none yet); per session Int64 start
/// value, Int32 start time scale, Int64 end value, Int32 end time scale (0:
/// still open). Times are counted from the first session's start, plus the
/// offset the writer starts its timeline at. The rest is zero.
struct SessionLog: Equatable {
    struct Session: Equatable {
        var start: MediaTime
        var end: MediaTime?
    }

    static let boxSize = 4096
    static let magic = Array("capctl:sessions1".utf8)

    /// Per track (in the movie box's order), the decode time of its first sample in its media time scale.
    var firstDecodeTimes: [Int64?]
    var sessions: [Session]
    /// Sessions were left out for lack of room.
    var isIncomplete = false

    init(trackCount: Int) {
        firstDecodeTimes = Array(repeating: nil, count: trackCount)
        sessions = []
    }

    private static let headerSize = 16 + 12
    private static let sessionSize = 24

    /// How many sessions fit beside `trackCount` tracks.
    static func capacity(trackCount: Int) -> Int {
        (boxSize - 8 - headerSize - 8 * trackCount) / sessionSize
    }

    /// The payload of the 'free' box: exactly `boxSize - 8` bytes.
    func payload() -> [UInt8] {
        var bytes = SessionLog.magic
        let room = SessionLog.capacity(trackCount: firstDecodeTimes.count)
        let kept = sessions.prefix(room)
        BigEndian.append(UInt32(firstDecodeTimes.count), to: &bytes)
        BigEndian.append(UInt32(kept.count), to: &bytes)
        BigEndian.append(UInt32(isIncomplete || sessions.count > room ? 1 : 0), to: &bytes)
        for first in firstDecodeTimes { BigEndian.append(UInt64(bitPattern: first ?? .min), to: &bytes) }
        for session in kept {
            Self.append(session.start, to: &bytes)
            if let end = session.end { Self.append(end, to: &bytes) } else { bytes += [UInt8](repeating: 0, count: 12) }
        }
        bytes += [UInt8](repeating: 0, count: SessionLog.boxSize - 8 - bytes.count)
        return bytes
    }

    /// The whole 'free' box.
    func box() -> [UInt8] {
        var bytes = [UInt8]()
        BigEndian.append(UInt32(SessionLog.boxSize), to: &bytes)
        bytes += Array("free".utf8)
        return bytes + payload()
    }

    private static func append(_ time: MediaTime, to bytes: inout [UInt8]) {
        BigEndian.append(UInt64(bitPattern: time.value), to: &bytes)
        BigEndian.append(UInt32(bitPattern: time.timescale), to: &bytes)
    }

    /// Reads a log from a 'free' box's payload; nil when it holds none.
    init?(payload: [UInt8]) {
        guard payload.count >= SessionLog.headerSize, Array(payload.prefix(16)) == SessionLog.magic else { return nil }
        let trackCount = Int(BigEndian.uint32(payload, at: 16))
        let sessionCount = Int(BigEndian.uint32(payload, at: 20))
        let flags = BigEndian.uint32(payload, at: 24)
        guard trackCount < 1024, sessionCount < 1 << 20,
              SessionLog.headerSize + 8 * trackCount + SessionLog.sessionSize * sessionCount <= payload.count else { return nil }
        var offset = SessionLog.headerSize
        firstDecodeTimes = (0..<trackCount).map { _ in
            let value = Int64(bitPattern: BigEndian.uint64(payload, at: offset))
            offset += 8
            return value == .min ? nil : value
        }
        sessions = []
        for _ in 0..<sessionCount {
            let startValue = Int64(bitPattern: BigEndian.uint64(payload, at: offset))
            let startScale = Int32(bitPattern: BigEndian.uint32(payload, at: offset + 8))
            let endValue = Int64(bitPattern: BigEndian.uint64(payload, at: offset + 12))
            let endScale = Int32(bitPattern: BigEndian.uint32(payload, at: offset + 20))
            offset += SessionLog.sessionSize
            guard startScale > 0, endScale >= 0 else { return nil }
            sessions.append(Session(start: MediaTime(value: startValue, timescale: startScale),
                                    end: endScale > 0 ? MediaTime(value: endValue, timescale: endScale) : nil))
        }
        isIncomplete = flags & 1 != 0
    }
}
