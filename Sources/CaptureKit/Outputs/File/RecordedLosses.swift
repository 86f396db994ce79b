/// The samples lost inside what a recording wrote, as its statistics
/// report them: over each stretch of source time its files cover (from a
/// start or resume, its pre-roll included, to a pause, a cut or the end),
/// the losses logged in that stretch, by the recorded inputs' devices and
/// by the queues before the writer (its own, the shared encoders'). A
/// pause, and the session's time before the recording began, count
/// nothing. For a device that keeps no log, what its count grew by while
/// a stretch was open, read when it opened and when it closed.
struct RecordedLosses {
    /// Losses by cause, and of them the audio sample frames (the rest are video frames).
    struct Count: Equatable {
        var device = 0
        var queue = 0
        var audio = 0

        static func + (lhs: Count, rhs: Count) -> Count {
            Count(device: lhs.device + rhs.device, queue: lhs.queue + rhs.queue, audio: lhs.audio + rhs.audio)
        }
    }

    private let devices: [any CaptureSource]
    private let queues: [(log: SampleLossLog, mediaType: MediaType)]
    /// Frames missing from the files that no device logged: a time-lapse's
    /// ticks that no frame came near (video, counted as the device's).
    private let missing: [SampleLossLog]
    private var openSince: MediaTime?
    private var deviceCountsAtOpen: [Int] = []
    private var closed = Count()

    /// Counts the losses of `devices` (the inputs a recording writes) and
    /// of `queues`, each holding samples of one media type.
    init(devices: [any CaptureSource] = [], queues: [(SampleLossLog, MediaType)] = [], missing: [SampleLossLog] = []) {
        self.devices = devices
        self.missing = missing
        self.queues = queues.map { (log: $0.0, mediaType: $0.1) }
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
        closed = closed + lost(from: start, before: time)
        openSince = nil
    }

    /// The losses so far: in the stretches closed, and in the open one up to now.
    var count: Count {
        guard let start = openSince else { return closed }
        return closed + lost(from: start, before: nil)
    }

    private func lost(from start: MediaTime, before end: MediaTime?) -> Count {
        var count = Count()
        for (source, countAtOpen) in zip(devices, deviceCountsAtOpen) {
            let lost = source.lossLog.map { $0.lost(from: start, before: end) } ?? max(0, source.droppedByDevice - countAtOpen)
            count.device += lost
            if source.mediaType == .audio { count.audio += lost }
        }
        for log in missing { count.device += log.lost(from: start, before: end) }
        for queue in queues {
            let lost = queue.log.lost(from: start, before: end)
            count.queue += lost
            if queue.mediaType == .audio { count.audio += lost }
        }
        return count
    }
}
