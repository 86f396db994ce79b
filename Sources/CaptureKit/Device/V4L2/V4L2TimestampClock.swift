/// Turns V4L2 buffer timestamps into CLOCK_MONOTONIC nanoseconds. The clock a
/// driver stamps with is decided once, from the first buffer's flags and
/// time, the way FFmpeg's libavdevice (v4l2.c, init_convert_timestamp) does:
/// a stamp within [now − 10 s, now + 1 s] of a clock is taken to be on it.
///
/// - `V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC` with a plausible time: used as is.
/// - A time near CLOCK_REALTIME (older drivers, whatever their flags say):
///   shifted by the monotonic − realtime offset measured at that moment.
/// - `TIMESTAMP_COPY` (the time of an output buffer, meaningless here),
///   `UNKNOWN` without a recognisable time, or anything else: stamped with
///   CLOCK_MONOTONIC when dequeued.
///
/// A converted stamp that is no longer plausible (a driver that wraps or
/// jumps) is replaced by the dequeue time for that buffer, and counted.
///
/// A stamp from before the stream started (more than a frame's exposure
/// earlier than VIDIOC_STREAMON) is a buffer left over from another reader:
/// v4l2loopback hands a new reader the last buffer its writer filled, stamped
/// when it was written, seconds ago. Taken at its word, that frame would count
/// as captured before the recording began and be dropped without a trace, or
/// start a track seconds early. It is moved to the stream's start, when the
/// frames it precedes began, and counted.
struct V4L2TimestampClock: Sendable {
    enum Mode: Sendable, Equatable {
        /// The driver stamps on CLOCK_MONOTONIC.
        case monotonic
        /// The driver stamps on CLOCK_REALTIME; add this many nanoseconds.
        case realtime(offset: Int64)
        /// Driver stamps are unusable; stamp at dequeue.
        case dequeueTime
    }

    static let timestampMask: UInt32 = 0x0000_e000
    static let timestampUnknown: UInt32 = 0x0000_0000
    static let timestampMonotonic: UInt32 = 0x0000_2000
    static let timestampCopy: UInt32 = 0x0000_4000

    /// How far before and after "now" a stamp may be and still count as on that clock.
    static let before: Int64 = 10_000_000_000
    static let after: Int64 = 1_000_000_000

    private(set) var mode: Mode?
    /// Buffers whose converted stamp was implausible and replaced by the dequeue time.
    private(set) var replacedStamps = 0
    /// The last time handed out, so that a moved stamp never goes before it.
    private var lastTime: Int64?
    /// Whether the last time handed out was a stamp moved to the stream's start.
    private var movedLast = false

    init() {}

    /// The clock a buffer with these flags and this stamp (nanoseconds) was stamped with.
    static func decide(flags: UInt32, timestamp: Int64, monotonicNow: Int64, realtimeNow: Int64) -> Mode {
        let source = flags & timestampMask
        if source == timestampCopy { return .dequeueTime }
        if source == timestampMonotonic, plausible(timestamp, now: monotonicNow) { return .monotonic }
        if timestamp != 0, plausible(timestamp, now: realtimeNow) { return .realtime(offset: monotonicNow - realtimeNow) }
        if source == timestampUnknown, timestamp != 0, plausible(timestamp, now: monotonicNow) { return .monotonic }
        return .dequeueTime
    }

    static func plausible(_ timestamp: Int64, now: Int64) -> Bool {
        timestamp >= now - before && timestamp <= now + after
    }

    /// The CLOCK_MONOTONIC time of a buffer dequeued at `monotonicNow`,
    /// deciding the clock on the first call. With `streamStart` (CLOCK_MONOTONIC
    /// just before VIDIOC_STREAMON), a stamp earlier than `streamStart − tolerance`
    /// (a frame's exposure and scheduling slack) moves to `streamStart` (or just
    /// after the last time handed out) and is counted in `replacedStamps`; the
    /// frames after it keep their order.
    mutating func monotonicTime(flags: UInt32, timestamp: Int64, monotonicNow: Int64, realtimeNow: Int64,
                                streamStart: Int64? = nil, tolerance: Int64 = 0) -> Int64 {
        let time = convertedTime(flags: flags, timestamp: timestamp, monotonicNow: monotonicNow,
                                 realtimeNow: realtimeNow, streamStart: streamStart, tolerance: tolerance)
        lastTime = time
        return time
    }

    private mutating func convertedTime(flags: UInt32, timestamp: Int64, monotonicNow: Int64, realtimeNow: Int64,
                                        streamStart: Int64?, tolerance: Int64) -> Int64 {
        let mode = self.mode ?? Self.decide(flags: flags, timestamp: timestamp, monotonicNow: monotonicNow, realtimeNow: realtimeNow)
        self.mode = mode
        let converted: Int64
        switch mode {
        case .monotonic: converted = timestamp
        case .realtime(let offset): converted = timestamp &+ offset
        case .dequeueTime: return monotonicNow
        }
        guard Self.plausible(converted, now: monotonicNow) else {
            replacedStamps += 1
            return monotonicNow
        }
        if let streamStart, converted < streamStart - tolerance {
            replacedStamps += 1
            movedLast = true
            return min(max(streamStart, (lastTime ?? .min) + 1), monotonicNow)
        }
        // A frame exposed as streaming began, after a leftover moved to the start: kept in order.
        if movedLast, let lastTime, converted <= lastTime { return lastTime + 1 }
        movedLast = false
        return converted
    }
}

/// Counts frames lost from gaps in a driver's 32-bit frame sequence numbers,
/// and extends them to 64 bits across wrap-around.
struct SequenceGapCounter: Sendable {
    private var last: UInt32?
    private(set) var extended: UInt64 = 0
    /// Frames missing between the sequences seen so far.
    private(set) var lost = 0

    init() {}

    /// Records a buffer's sequence number; returns how many frames were
    /// lost just before it. A repeated or backward number (a driver that
    /// restarted its count) is not a loss.
    @discardableResult
    mutating func record(_ sequence: UInt32) -> Int {
        defer { last = sequence }
        guard let last else {
            extended = UInt64(sequence)
            return 0
        }
        let step = sequence &- last
        guard step != 0 else { return 0 }
        // A step past half the range is a backward jump, not 2^31 lost frames;
        // the extended count still moves on, so it never repeats.
        guard step < 1 << 31 else {
            extended += 1
            return 0
        }
        extended += UInt64(step)
        let missing = Int(step - 1)
        lost += missing
        return missing
    }
}
