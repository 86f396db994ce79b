import Synchronization

/// A recording's time-lapse, between the capture threads and its queue:
/// each camera's frames go through a `TimeLapsePicker` (every camera on
/// the same ticks, the first at the first frame of any), and the frames
/// kept are restamped on the time-lapse's own time line, tick k at
/// `origin + k × frameDuration`. Everything after (limits, segments,
/// pauses, the file's times) sees only that time line, so media time
/// counts the file's frames, and a pause leaves out the ticks that passed
/// while it lasted. Ticks missed are logged in `misses` at their place on
/// that time line, as frames lost from the file.
///
/// Threads: `take` is called on each camera's capture thread; the pickers
/// are under `state`.
final class TimeLapseFrames: Sendable {
    let timeLapse: TimeLapse
    /// Ticks no frame came near, at their restamped times.
    let misses = SampleLossLog()
    private let interval: Int64

    private struct State {
        var origin: Int64?
        var pickers: [Int: TimeLapsePicker<VideoSampleBuffer>] = [:]
    }
    private let state = Mutex(State())

    init(_ timeLapse: TimeLapse) {
        self.timeLapse = timeLapse
        interval = max(1, timeLapse.interval.converted(toTimescale: MonotonicClock.timescale).value)
    }

    /// Takes camera `input`'s frame; answers the frame it settles as kept
    /// (an earlier one, restamped), if any.
    func take(_ frame: VideoSampleBuffer, input: Int) -> VideoSampleBuffer? {
        let time = frame.presentationTime.converted(toTimescale: MonotonicClock.timescale).value
        let (outcome, origin) = state.withLock { state in
            if state.origin == nil { state.origin = time }
            var picker = state.pickers[input] ?? TimeLapsePicker(interval: interval, origin: state.origin)
            let outcome = picker.offer(frame, at: time)
            state.pickers[input] = picker
            return (outcome, state.origin ?? time)
        }
        if !outcome.missed.isEmpty {
            misses.record(outcome.missed.count, at: restamped(outcome.missed.lowerBound, origin: origin))
        }
        guard let (kept, tick) = outcome.picked else { return nil }
        return VideoSampleBuffer(storage: kept.storage, layout: kept.layout, width: kept.width, height: kept.height,
                                 presentationTime: restamped(tick, origin: origin), duration: timeLapse.frameDuration,
                                 sequence: kept.sequence, isKeyframe: kept.isKeyframe)
    }

    /// Tick `tick`'s time on the time-lapse's time line (nanoseconds, from the first frame's capture time).
    func restamped(_ tick: Int64, origin: Int64) -> MediaTime {
        let frame = timeLapse.frameDuration
        let offset = Int64((Double(tick) * Double(frame.value) * 1e9 / Double(frame.timescale)).rounded())
        return MediaTime(value: origin + offset, timescale: MonotonicClock.timescale)
    }
}
