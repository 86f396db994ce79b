/// The samples lost inside what a recording wrote, as its statistics
/// report them: over each stretch of source time its files cover (from a
/// start or resume, its pre-roll included, to a pause, a cut or the end),
/// the losses logged in that stretch, by the recorded inputs' devices and
/// by the queues before the writer (its own, the shared encoders'). A
/// pause, and the session's time before the recording began, count
/// nothing. For a device that keeps no log, what its count grew by while
/// a stretch was open, as the writing thread saw it.
struct RecordedLosses {
    private let devices: [any CaptureSource]
    private let queues: [SampleLossLog]
    private var openSince: MediaTime?
    private var deviceCountsAtOpen: [Int] = []
    private var closed = (device: 0, queue: 0)

    /// Counts the losses of `devices` (the inputs a recording writes) and of `queues`.
    init(devices: [any CaptureSource] = [], queues: [SampleLossLog] = []) {
        self.devices = devices
        self.queues = queues
    }

    /// A stretch begins at source time `time`; one already open runs on.
    mutating func open(at time: MediaTime) {
        guard openSince == nil else { return }
        openSince = time
        deviceCountsAtOpen = devices.map(\.droppedByDevice)
    }

    /// The open stretch ends at source time `time`.
    mutating func close(at time: MediaTime) {
        guard let start = openSince else { return }
        let lost = self.lost(from: start, before: time)
        closed = (closed.device + lost.device, closed.queue + lost.queue)
        openSince = nil
    }

    /// The losses so far: in the stretches closed, and in the open one up to now.
    var count: (device: Int, queue: Int) {
        guard let start = openSince else { return closed }
        let lost = self.lost(from: start, before: nil)
        return (closed.device + lost.device, closed.queue + lost.queue)
    }

    private func lost(from start: MediaTime, before end: MediaTime?) -> (device: Int, queue: Int) {
        let device = zip(devices, deviceCountsAtOpen).reduce(0) { sum, pair in
            let (source, countAtOpen) = pair
            if let log = source.lossLog { return sum + log.lost(from: start, before: end) }
            return sum + max(0, source.droppedByDevice - countAtOpen)
        }
        let queue = queues.reduce(0) { $0 + $1.lost(from: start, before: end) }
        return (device, queue)
    }
}
