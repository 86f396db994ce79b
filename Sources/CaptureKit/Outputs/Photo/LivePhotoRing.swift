/// The latest frames a photo output keeps for live photo movies: copies,
/// trimmed to a span of capture time and a number of frames. For an
/// inter-coded stream (H.264, HEVC) the ring is trimmed back only to a
/// keyframe, so that every frame of the span can be decoded.
///
/// Owned by the capture state of a photo output (under its lock).
struct LivePhotoRing {
    private(set) var frames: [VideoSampleBuffer] = []
    /// Whether frames need the keyframe before them to be decoded.
    let isInterCoded: Bool

    init(isInterCoded: Bool) { self.isInterCoded = isInterCoded }

    /// Adds `frame` (a copy) and drops what is older than `keep` nanoseconds
    /// before it (for an inter-coded stream, only up to the keyframe the
    /// frames after it need), and more than `maximumFrames` in any case.
    mutating func append(_ frame: VideoSampleBuffer, keep: Int64, maximumFrames: Int) {
        frames.append(frame)
        let newest = Self.nanoseconds(frame.presentationTime)
        var old = 0
        while old < frames.count, newest - Self.nanoseconds(frames[old].presentationTime) > keep { old += 1 }
        if isInterCoded, old > 0 {
            // Keep the keyframe that the first frame kept refers back to.
            if let keyframe = frames[...min(old, frames.count - 1)].lastIndex(where: \.isKeyframe) { old = keyframe }
        }
        let drop = max(old, frames.count - maximumFrames)
        if drop > 0 { frames.removeFirst(drop) }
    }

    mutating func removeAll() { frames = [] }

    /// The newest frame's capture time (nanoseconds), if any.
    var latest: Int64? { frames.last.map { Self.nanoseconds($0.presentationTime) } }

    /// What a movie of the span `start...end` (nanoseconds) is made from.
    struct Selection {
        /// The frames to decode, in order: for an inter-coded stream from the
        /// keyframe at or before the span (else its first keyframe) on.
        let feed: [VideoSampleBuffer]
        /// The frames of `feed` the movie shows: those in the span.
        let shown: [VideoSampleBuffer]
    }

    /// The frames for a movie of `start...end`; nil when none of them can be shown.
    func selection(from start: Int64, to end: Int64) -> Selection? {
        let upToEnd = frames.prefix { Self.nanoseconds($0.presentationTime) <= end }
        let first = upToEnd.firstIndex { Self.nanoseconds($0.presentationTime) >= start } ?? upToEnd.endIndex
        if isInterCoded {
            let before = upToEnd[..<first].lastIndex(where: \.isKeyframe)
            guard let keyframe = before ?? upToEnd[first...].firstIndex(where: \.isKeyframe) else { return nil }
            let feed = Array(upToEnd[keyframe...])
            let shown = feed.filter { Self.nanoseconds($0.presentationTime) >= start }
            return shown.isEmpty ? nil : Selection(feed: feed, shown: shown)
        }
        let shown = Array(upToEnd[first...])
        return shown.isEmpty ? nil : Selection(feed: shown, shown: shown)
    }

    static func nanoseconds(_ time: MediaTime) -> Int64 { time.converted(toTimescale: MonotonicClock.timescale).value }
}
