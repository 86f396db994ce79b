import CFFmpeg

/// The stamps of a file's frames on CLOCK_MONOTONIC: the first frame at
/// `start`, each later one at `start` plus its distance from the first.
/// Frames without a timestamp follow the previous one by a frame duration
/// (all of them do in a track without timestamps).
struct FileFrameTiming {
    struct Stamp {
        /// The frame's presentation time.
        let time: MediaTime
        /// When it may be delivered: its stamp, or a later one's where frames are reordered.
        let due: Int64
        /// When it must be decoded, where that differs from `time` (frames reordered).
        let decodeTime: MediaTime?
    }

    let start: Int64
    let timeBase: AVRational
    let frameDuration: (numerator: Int64, denominator: Int64)
    private var first: Int64?
    private var previous: Int64?
    private var latestDue: Int64 = .min
    /// The number of the frame last stamped.
    private(set) var sequence: UInt64 = 0
    private var count: UInt64 = 0

    init(start: Int64, timeBase: AVRational, frameDuration: (numerator: Int64, denominator: Int64)) {
        self.start = start
        self.timeBase = timeBase
        self.frameDuration = frameDuration
    }

    mutating func stamp(pts: Int64, dts: Int64) -> Stamp {
        let stated = pts != cffmpeg_AV_NOPTS_VALUE ? pts : dts
        var offset: Int64
        if stated != cffmpeg_AV_NOPTS_VALUE {
            if first == nil { first = stated }
            offset = av_rescale_q(stated - first!, timeBase, AVRational(num: 1, den: MonotonicClock.timescale))
        } else if let previous {
            offset = previous + SampleClock(start: 0, numerator: frameDuration.numerator, denominator: frameDuration.denominator).nanoseconds(at: 1)
        } else {
            offset = 0
        }
        previous = offset
        sequence = count
        count += 1
        let time = start + offset
        latestDue = max(latestDue, time)
        var decodeTime: MediaTime?
        if pts != cffmpeg_AV_NOPTS_VALUE, dts != cffmpeg_AV_NOPTS_VALUE, dts != pts, let first {
            // On the same clock as the presentation times, from the same origin.
            let decodeOffset = av_rescale_q(dts - first, timeBase, AVRational(num: 1, den: MonotonicClock.timescale))
            decodeTime = MediaTime(value: start + decodeOffset, timescale: MonotonicClock.timescale)
        }
        return Stamp(time: MediaTime(value: time, timescale: MonotonicClock.timescale), due: latestDue, decodeTime: decodeTime)
    }
}
