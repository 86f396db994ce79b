/// The samples the devices lost inside what a recording wrote, as its
/// statistics report them: over each stretch of source time its files
/// cover (from a start or resume, its pre-roll included, to a pause, a
/// cut or the end), the losses each recorded input logged in that stretch.
/// A pause, and the session's time before the recording began, count
/// nothing. For a source that keeps no log, what its count grew by while a
/// stretch was open, as the writing thread saw it.
struct RecordedDeviceLosses {
    private let sources: [any CaptureSource]
    private var openSince: MediaTime?
    private var countsAtOpen: [Int] = []
    private var closed = 0

    /// Counts the losses of `sources` (the inputs a recording writes).
    init(sources: [any CaptureSource] = []) {
        self.sources = sources
    }

    /// A stretch begins at source time `time`; one already open runs on.
    mutating func open(at time: MediaTime) {
        guard openSince == nil else { return }
        openSince = time
        countsAtOpen = sources.map(\.droppedByDevice)
    }

    /// The open stretch ends at source time `time`.
    mutating func close(at time: MediaTime) {
        guard let start = openSince else { return }
        closed += lost(from: start, before: time)
        openSince = nil
    }

    /// The losses so far: in the stretches closed, and in the open one up to now.
    var count: Int {
        guard let start = openSince else { return closed }
        return closed + lost(from: start, before: nil)
    }

    private func lost(from start: MediaTime, before end: MediaTime?) -> Int {
        zip(sources, countsAtOpen).reduce(0) { sum, pair in
            let (source, countAtOpen) = pair
            if let log = source.lossLog { return sum + log.lost(from: start, before: end) }
            return sum + max(0, source.droppedByDevice - countAtOpen)
        }
    }
}
