/// When samples were lost on their way to an output, on the session clock:
/// by a device (sequence gaps, overruns) or by a queue that was full, so that
/// a recording counts only the losses inside the stretches it recorded, not
/// those of a pause, nor those before it began or after it ended.
///
/// Each loss is logged at the capture time where the lost samples begin
/// (as near as the device tells). The latest `capacity` losses are kept one
/// by one; older ones are summed into a single count, which a question
/// about a time before them counts as lost before it. A recording asks
/// about times no older than its pre-roll, so only samples lost many times
/// a second for minutes on end come near that.
package final class SampleLossLog: Sendable {
    private struct Loss {
        var time: Int64
        /// Samples lost up to and including this loss.
        var cumulative: Int
    }

    private struct State {
        var losses: [Loss] = []
        /// Samples lost in the losses no longer kept one by one.
        var folded = 0
        var total = 0
    }

    private let state = Locked(State())
    private let capacity: Int

    /// An empty log keeping up to `capacity` losses one by one.
    package init(capacity: Int = 8192) {
        self.capacity = max(2, capacity)
    }

    /// Logs `count` samples lost from `time` on.
    package func record(_ count: Int, at time: MediaTime) {
        record(count, atNanoseconds: Self.nanoseconds(time))
    }

    /// Logs `count` samples lost from `nanoseconds` (monotonic clock) on.
    package func record(_ count: Int, atNanoseconds nanoseconds: Int64) {
        guard count > 0 else { return }
        state.withLock { state in
            state.total += count
            // A device logs in capture order; a stamp out of order goes with the latest.
            let time = max(nanoseconds, state.losses.last?.time ?? .min)
            state.losses.append(Loss(time: time, cumulative: state.total))
            if state.losses.count > capacity {
                let letGo = capacity / 2
                state.folded = state.losses[letGo - 1].cumulative
                state.losses.removeFirst(letGo)
            }
        }
    }

    /// Every sample lost so far.
    package var total: Int { state.withLock { $0.total } }

    /// Samples lost before `time`.
    package func lost(before time: MediaTime) -> Int {
        let limit = Self.nanoseconds(time)
        return state.withLock { state in
            // The first kept loss at or after `limit`, by bisection.
            var low = 0, high = state.losses.count
            while low < high {
                let middle = (low + high) / 2
                if state.losses[middle].time < limit { low = middle + 1 } else { high = middle }
            }
            return low == 0 ? state.folded : state.losses[low - 1].cumulative
        }
    }

    /// Samples lost from `start` up to `end` (nil: up to now).
    package func lost(from start: MediaTime, before end: MediaTime?) -> Int {
        let upToEnd = end.map { lost(before: $0) } ?? total
        return max(0, upToEnd - lost(before: start))
    }

    /// A time on the capture clock's nanosecond scale; before or after every
    /// stamp for one that is not a number.
    private static func nanoseconds(_ time: MediaTime) -> Int64 {
        guard time.isNumeric else { return time.seconds > 0 ? .max : .min }
        return time.converted(toTimescale: MonotonicClock.timescale).value
    }
}
