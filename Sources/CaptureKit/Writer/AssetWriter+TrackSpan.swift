/// What a writer has handed the muxer per stream: where the track starts,
/// the stretches its samples cover (for the edit lists), and what its sample
/// tables will hold (for the size estimate).
extension AssetWriter {
    /// What has been written to one stream, in its time base.
    struct TrackSpanTicks {
        var firstDecode: Int64?
        /// Covered stretches [start, end), sorted, merged when they touch.
        var runs: [(start: Int64, end: Int64)] = []
        var packets = 0
        /// Packets with data: the samples the muxer writes.
        var samples = 0
        /// What the track's sample tables will hold, for the size estimate:
        /// runs of equal decode steps and of equal composition offsets, and keyframes.
        var timeRuns = 0
        var offsetRuns = 0
        var keyframes = 0
        var lastDecode: Int64?
        var lastStep: Int64?
        var lastOffset: Int64?
        /// Gaps up to this long (the longest packet duration seen) are
        /// rounding or a dropped sample, not a pause: runs bridge them.
        var tolerance: Int64 = 0
        /// Video: a frame shows until the next one (see `SessionTimeline.TrackSpan`).
        var bridgesEveryGap = false

        /// Counts a sample into the estimate of the sample tables.
        mutating func tally(decode: Int64, presentation: Int64, keyframe: Bool) {
            samples += 1
            if keyframe { keyframes += 1 }
            if let lastDecode {
                let step = decode - lastDecode
                if step != lastStep { timeRuns += 1 }
                lastStep = step
            }
            let offset = presentation - decode
            if offset != lastOffset { offsetRuns += 1 }
            lastOffset = offset
            lastDecode = decode
            timeRuns = max(timeRuns, 1)
        }

        /// Records a sample's span; one without a duration still marks where
        /// a run starts, to be joined to the next sample.
        mutating func cover(_ start: Int64, _ end: Int64) {
            guard end >= start else { return }
            tolerance = max(tolerance, end - start)
            // Packets come nearly in order: search from the back.
            var index = runs.count
            while index > 0 && runs[index - 1].start > start { index -= 1 }
            runs.insert((start, end), at: index)
            var merged = max(index - 1, 0)
            while merged + 1 < runs.count {
                if runs[merged + 1].start <= runs[merged].end + tolerance {
                    runs[merged].end = max(runs[merged].end, runs[merged + 1].end)
                    runs.remove(at: merged + 1)
                } else if merged >= index {
                    break
                } else {
                    merged += 1
                }
            }
        }
    }
}
