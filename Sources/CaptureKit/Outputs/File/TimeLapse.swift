/// A time-lapse recording: one frame for every `interval` of capture time
/// (the frame nearest each tick of the capture clock, the first tick at the
/// first frame), each shown for `frameDuration` in the file, so that tick
/// k plays at k × `frameDuration`. A tick no frame came near (the camera
/// stalled) is left out: the frame before it shows longer, and the file
/// keeps capture time's proportions. The video is encoded for the file at
/// `1 / frameDuration` frames a second; audio is not recorded.
public struct TimeLapse: Sendable, Hashable {
    /// Capture time between the frames kept.
    public var interval: MediaTime
    /// How long each kept frame shows in the file (1/30 s for 30 frames a second).
    public var frameDuration: MediaTime

    public init(interval: MediaTime, frameDuration: MediaTime = MediaTime(value: 1, timescale: 30)) {
        self.interval = interval
        self.frameDuration = frameDuration
    }

    /// A time-lapse whose file plays at `framesPerSecond` (such as 30, 25 or 29.97).
    public init(interval: MediaTime, framesPerSecond: Double) {
        self.init(interval: interval, frameDuration: Self.frameDuration(framesPerSecond: framesPerSecond))
    }

    /// How much faster than capture time the file plays (interval / frame duration).
    public var speedUp: Double { interval.seconds / frameDuration.seconds }

    /// The frame duration of a rate: exact for whole rates and NTSC's (29.97 is 1001/30000).
    public static func frameDuration(framesPerSecond rate: Double) -> MediaTime {
        guard rate.isFinite, rate > 0 else { return .invalid }
        if rate == rate.rounded(), rate <= Double(Int32.max) { return MediaTime(value: 1, timescale: Int32(rate)) }
        let ntsc = (rate * 1.001).rounded()
        if abs(ntsc / 1.001 - rate) < 0.005, ntsc * 1000 <= Double(Int32.max) { return MediaTime(value: 1001, timescale: Int32(ntsc * 1000)) }
        return MediaTime(value: 1000, timescale: Int32(clamping: Int64((rate * 1000).rounded())))
    }

    /// Why the time-lapse cannot be recorded as it stands, if it cannot.
    var problem: String? {
        guard interval.isNumeric, interval > .zero else { return "a time-lapse needs an interval longer than zero" }
        guard frameDuration.isNumeric, frameDuration > .zero else { return "a time-lapse needs a frame rate above zero" }
        return nil
    }
}
