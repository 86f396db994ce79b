import CaptureKit
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `record`'s progress on stdout: one refreshing status line on a terminal,
/// or one JSON object a line (events `started`, `progress`, `paused`,
/// `resumed`, `segment`, `file-deleted`, `audio-silent`, `audio-restored`, `finished`). Field names are stable.
package final class RecordingReporter: Sendable {
    package struct Limits {
        var duration: MediaTime?
        var size: Int64?
        var minFreeSpace: Int64
    }

    let style: ProgressStyle
    /// Whether progress says what the pre-roll holds (--pre-roll); set before the recording starts.
    let showsPreRoll: Bool
    /// Whether the status line shows each microphone's level (a terminal's only).
    let showsLevelMeters: Bool
    /// Whether the recording deletes files (a retention): `finished` says how many.
    let showsDeletions: Bool
    /// Where JSON lines go instead of stdout, each carrying `recording` (the
    /// service's events: several recordings share its stdout and event stream).
    let sink: (any RecordingEventSink)?
    /// How events name a file (the service names them inside its folder).
    let fileName: @Sendable (String) -> String

    /// What the reports so far leave for the next (and the output's order: lines are written under its lock).
    private struct State {
        var lineShown = false
        var lastFrames = 0
        var lastTime = MonotonicClock.nowNanoseconds()
        var lastBytes: Int64 = 0
        var lastDuration = 0.0
    /// Whether `started` has been emitted, and the pause or resume events
    /// that came before it (a recording that begins paused says so while
    /// the session starts): they follow it.
        var hasStarted = false
        var beforeStart: [@Sendable () -> Void] = []
    /// Each stream's bytes at the last status, and when that was (for bit rates).
        var streamBytes: [Int64] = []
        var lastStreamStatus = MonotonicClock.nowNanoseconds()
        var finished: FinishedEvent?
    }
    private let state = Mutex(State())

    package init(style: ProgressStyle, showsPreRoll: Bool = false, showsLevelMeters: Bool = false, showsDeletions: Bool = false,
         sink: (any RecordingEventSink)? = nil, fileName: @escaping @Sendable (String) -> String = { $0 }) {
        self.style = style
        self.showsPreRoll = showsPreRoll
        self.showsLevelMeters = showsLevelMeters
        self.showsDeletions = showsDeletions
        self.sink = sink
        self.fileName = fileName
    }

    /// The `finished` event, once it has been reported.
    package var finishedEvent: FinishedEvent? { state.withLock { $0.finished } }

    /// Each stream's state now, bit rates over the time since the last call.
    package func streamStatuses(_ streams: [(destination: StreamDestination, statistics: LiveStreamStatistics)]) -> [StreamStatus] {
        let now = MonotonicClock.nowNanoseconds()
        return state.withLock { state in
            let elapsed = Double(now - state.lastStreamStatus) / 1e9
            state.lastStreamStatus = now
            return Self.streamStatuses(streams.map { ($0.destination.description, $0.statistics) }, previousBytes: &state.streamBytes, elapsed: elapsed)
        }
    }

    // MARK: Events

    package func started(files paths: [String], inputs: [CaptureInput], limits: Limits, streams: [String] = []) {
        let files = paths.map(fileName)
        let devices = inputs.map { input -> StartedEvent.Input in
            let source = input.source
            if let video = source.videoFormat {
                return .init(device: source.path, name: source.localizedName, mediaType: "video", format: video.fourcc,
                             width: video.width, height: video.height, frameRate: video.frameDuration.map { $0.seconds > 0 ? 1 / $0.seconds : 0 },
                             sampleRate: nil, channels: nil)
            }
            let audio = source.audioFormat
            return .init(device: source.path, name: source.localizedName, mediaType: "audio", format: audio?.sampleFormat.rawValue,
                         width: nil, height: nil, frameRate: nil, sampleRate: audio?.sampleRate, channels: audio?.channels)
        }
        emit(StartedEvent(time: EventTime.now(), file: files.first ?? "", files: files.count > 1 ? files : nil, inputs: devices,
                          maxDuration: limits.duration?.seconds, maxSize: limits.size, minFreeSpace: limits.minFreeSpace,
                          streams: streams.isEmpty ? nil : streams)) {
            let names = inputs.map { "\($0.source.path) (\($0.source.localizedName))" }.joined(separator: ", ")
            let targets = (files + streams).joined(separator: " and ")
            return "recording \(names) to \(targets); Ctrl-C to stop"
        }
        let held = state.withLock { state -> [@Sendable () -> Void] in
            state.hasStarted = true
            defer { state.beforeStart = [] }
            return state.beforeStart
        }
        for event in held { event() }
    }

    /// Runs `event` now, or right after `started` when that has not been emitted yet.
    private func afterStart(_ event: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if !state.hasStarted { state.beforeStart.append(event) }
            return state.hasStarted
        }
        if now { event() }
    }

    package func progress(_ statistics: RecordingStatistics, limits: Limits, freeSpace: Int64?, streams: [StreamStatus] = [],
                  audioLevels: [CaptureRecorderAudioLevels] = []) {
        let now = MonotonicClock.nowNanoseconds()
        let (fps, bitRate) = state.withLock { state -> (Double, Double) in
            let rates = Self.rates(statistics, since: state, now: now)
            state.lastTime = now
            state.lastFrames = statistics.videoFrames
            state.lastBytes = statistics.bytes
            state.lastDuration = statistics.duration.seconds
            return rates
        }
        let event = progressEvent(statistics, limits: limits, freeSpace: freeSpace, streams: streams, fps: fps, bitRate: bitRate,
                                  audioLevels: audioLevels)
        let remaining = event.remaining
        if style == .json {
            emitJSON(event)
            return
        }
        var parts = [statistics.isPaused ? "paused" : "rec", formatClock(statistics.duration.seconds), formatBytes(statistics.bytes),
                     String(cFormat: "%.1f fps", fps), "dropped \(statistics.dropped)", String(cFormat: "%.2f Mb/s", bitRate / 1e6)]
        var left: [String] = []
        if let duration = remaining.duration { left.append(formatClock(duration)) }
        if let size = remaining.size { left.append(formatBytes(size)) }
        if !left.isEmpty { parts.append("left " + left.joined(separator: " / ")) }
        if showsPreRoll && statistics.isPaused {
            parts.append(String(cFormat: "pre-roll %.1fs", statistics.preRollDuration.seconds) + " " + formatBytes(Int64(statistics.preRollBytes)))
        }
        for (index, stream) in streams.enumerated() { parts.append(Self.streamText(stream, index: index + 1)) }
        if showsLevelMeters { parts += Self.levelMeters(audioLevels) }
        state.withLock { state in
            // \r and erase-to-end: the line refreshes in place.
            print("\r\u{1B}[K" + parts.joined(separator: "  "), terminator: "")
            fflush(nil)
            state.lineShown = true
        }
    }

    /// The progress event for now, its rates over the time since the last
    /// report, without making this a report (for a service's status request).
    package func currentProgress(_ statistics: RecordingStatistics, limits: Limits, freeSpace: Int64?, streams: [StreamStatus] = [],
                         audioLevels: [CaptureRecorderAudioLevels] = []) -> ProgressEvent {
        let now = MonotonicClock.nowNanoseconds()
        let (fps, bitRate) = state.withLock { Self.rates(statistics, since: $0, now: now) }
        return progressEvent(statistics, limits: limits, freeSpace: freeSpace, streams: streams, fps: fps, bitRate: bitRate,
                             audioLevels: audioLevels)
    }

    /// Frames a second over wall time, and bits a second over media time, since the last report.
    private static func rates(_ statistics: RecordingStatistics, since state: State, now: Int64) -> (Double, Double) {
        let wall = Double(now - state.lastTime) / 1e9
        let media = statistics.duration.seconds - state.lastDuration
        let fps = wall > 0 ? Double(statistics.videoFrames - state.lastFrames) / wall : 0
        let rate = media > 0 ? Double(statistics.bytes - state.lastBytes) * 8 / media : 0
        return (fps, rate)
    }

    private func progressEvent(_ statistics: RecordingStatistics, limits: Limits, freeSpace: Int64?, streams: [StreamStatus],
                               fps: Double, bitRate: Double, audioLevels: [CaptureRecorderAudioLevels]) -> ProgressEvent {
        let remaining = Remaining(duration: limits.duration.map { max(0, $0.seconds - statistics.duration.seconds) },
                                  size: limits.size.map { max(0, $0 - statistics.bytes) },
                                  freeSpace: freeSpace.map { limits.minFreeSpace > 0 ? max(0, $0 - limits.minFreeSpace) : $0 })
        return ProgressEvent(time: EventTime.now(), duration: statistics.duration.seconds, bytes: statistics.bytes,
                             frames: statistics.videoFrames, audioSamples: statistics.audioSamples,
                             silenceInsertedSamples: statistics.silenceInsertedSamples, fps: fps.rounded(toPlaces: 2),
                             bitRate: Int(bitRate), dropped: statistics.dropped, paused: statistics.isPaused,
                             file: max(statistics.fileNumber, 1), remaining: remaining,
                             preRoll: showsPreRoll ? PreRollHeld(statistics) : nil, streams: streams.isEmpty ? nil : streams,
                             audioLevels: audioLevels.isEmpty ? nil : audioLevels.map(MicrophoneLevels.init))
    }

    func paused(path filePath: String, statistics: RecordingStatistics, cause: PauseCause? = nil) {
        let path = fileName(filePath)
        let time = EventTime.now()
        afterStart { [self] in
            emit(StateEvent(event: "paused", time: time, file: path, duration: statistics.duration.seconds, cause: cause)) {
                "paused \(path) at \(formatClock(statistics.duration.seconds))" + (cause.map { " (\($0.rawValue))" } ?? "")
            }
        }
    }

    func resumed(path filePath: String, statistics: RecordingStatistics, cause: PauseCause? = nil) {
        let path = fileName(filePath)
        let preRoll = showsPreRoll ? statistics.lastPreRoll.seconds : nil
        let time = EventTime.now()
        afterStart { [self] in
            emit(StateEvent(event: "resumed", time: time, file: path, duration: statistics.duration.seconds, cause: cause, preRoll: preRoll)) {
                "resumed \(path)" + (cause.map { " (\($0.rawValue))" } ?? "") + (preRoll.map { String(cFormat: " with %.2fs of pre-roll", $0) } ?? "")
            }
        }
    }

    /// The motion detector saw motion begin or end; `score` is the share of the picture (percent) that changed.
    func motion(started: Bool, score: Double) {
        emit(MotionEvent(event: started ? "motion-started" : "motion-ended", time: EventTime.now(), score: score.rounded(toPlaces: 2))) {
            "motion \(started ? "started" : "ended") " + String(cFormat: "(%.1f%% of the picture changed)", score)
        }
    }

    /// A camera went away and the recording goes on with the others.
    func cameraLost(_ input: CaptureInput, camera: Int, statistics: RecordingStatistics) {
        emit(CameraLostEvent(time: EventTime.now(), device: input.source.path, name: input.source.localizedName, camera: camera,
                             duration: statistics.duration.seconds)) {
            "camera \(camera), \(input.source.path) (\(input.source.localizedName)), went away at \(formatClock(statistics.duration.seconds)); recording goes on with the others"
        }
    }

    /// A marker was put in the recording: `mediaTime` in the whole recording, `fileTime` in its file.
    @discardableResult
    package func marker(_ marker: RecordingMarker) -> MarkerEvent {
        let event = MarkerEvent(time: EventTime.now(), title: marker.title, file: fileName(marker.path),
                                fileTime: marker.time.seconds, mediaTime: marker.recordingTime.seconds)
        emit(event) { "marker '\(marker.title)' at \(formatClock(marker.recordingTime.seconds)) in \(fileName(marker.path))" }
        return event
    }

    func segment(_ file: RecordedFile, error: RecordingError?) {
        emit(SegmentEvent(time: EventTime.now(), file: fileName(file.path), index: file.index, duration: file.duration.seconds, bytes: file.bytes,
                          frames: file.videoFrames, audioSamples: file.audioSamples, silenceInsertedSamples: file.silenceInsertedSamples,
                          complete: file.isComplete, error: error?.description,
                          start: file.firstCaptureTime.map(EventTime.wallTime(ofCaptureTime:)))) {
            "wrote \(fileName(file.path)): \(formatClock(file.duration.seconds)), \(formatBytes(file.bytes)), \(file.videoFrames) frames" + (file.isComplete ? "" : " (not finalized)")
        }
    }

    /// The retention deleted a file: `reason` is the option whose bound it passed, or low-space.
    func fileDeleted(_ path: String, bytes: Int64, reason: String) {
        let file = fileName(path)
        emit(FileDeletedEvent(time: EventTime.now(), file: file, bytes: bytes, reason: reason)) {
            "deleted \(file): \(formatBytes(bytes)) (\(reason))"
        }
    }

    func finished(_ statistics: RecordingStatistics, reason: RecordingStopReason, error: RecordingError?, status: ExitStatus,
                  streams: [StreamStatus] = [], failure: String? = nil, lostCameras: [Int] = []) {
        if let failure { Diagnostics.error(failure) } else if let error, !error.recordingSuccessfullyFinished { Diagnostics.error(error.description) }
        let event = FinishedEvent(time: EventTime.now(), reason: reason.rawValue, files: statistics.files.map(fileName), duration: statistics.duration.seconds,
                           bytes: statistics.bytes, frames: statistics.videoFrames, dropped: statistics.dropped,
                           droppedByDevice: statistics.droppedByDevice, droppedByQueue: statistics.droppedByQueue,
                           droppedByWriter: statistics.droppedByWriter, droppedBeforeKeyframe: statistics.droppedBeforeKeyframe,
                           droppedFrames: statistics.droppedVideoFrames, droppedAudioSamples: statistics.droppedAudioSamples,
                           audioSamples: statistics.audioSamples, silenceInsertedSamples: statistics.silenceInsertedSamples,
                           error: failure ?? error.flatMap { $0.recordingSuccessfullyFinished ? nil : $0.description },
                           exitStatus: status.rawValue, streams: streams.isEmpty ? nil : streams,
                           lostCameras: lostCameras.isEmpty ? nil : lostCameras,
                           deletedFiles: showsDeletions ? statistics.deletedFileCount : nil,
                           deletedBytes: showsDeletions ? statistics.deletedBytes : nil)
        state.withLock { $0.finished = event }
        emit(event) {
            var text = "finished (\(reason.rawValue)): \(statistics.files.count) file\(statistics.files.count == 1 ? "" : "s"), "
            text += "\(formatClock(statistics.duration.seconds)), \(formatBytes(statistics.bytes)), \(statistics.videoFrames) frames, "
            text += "\(statistics.audioSamples) audio samples, \(statistics.dropped) dropped"
            if statistics.dropped > 0 {
                text += " (\(statistics.droppedVideoFrames) frames, \(statistics.droppedAudioSamples) audio samples)"
            }
            if statistics.silenceInsertedSamples > 0 { text += "; \(statistics.silenceInsertedSamples) audio samples of silence fill what was lost" }
            if showsDeletions { text += "; deleted \(statistics.deletedFileCount) file\(statistics.deletedFileCount == 1 ? "" : "s") (\(formatBytes(statistics.deletedBytes)))" }
            if !lostCameras.isEmpty { text += "; lost camera \(lostCameras.map(String.init).joined(separator: ", "))" }
            for (index, stream) in streams.enumerated() { text += "\n" + Self.streamSummary(stream, index: index + 1) }
            return text
        }
    }

    /// A second interrupt: the process leaves at once.
    func interruptedAgain() {
        let line = style == .json ? "{\"event\":\"interrupted\"}\n" : "\ninterrupted: leaving at once; the file is readable up to its last fragment\n"
        StandardStream.output.write(line)
    }

    // MARK: Output

    func emit<T: Encodable>(_ event: T, text: () -> String) {
        if style == .json {
            emitJSON(event)
            return
        }
        let line = text()
        state.withLock { state in
            print((state.lineShown ? "\r\u{1B}[K" : "") + line)
            fflush(nil)
            state.lineShown = false
        }
    }

    /// One JSON line: to the sink, or to stdout.
    private func emitJSON<T: Encodable>(_ event: T) {
        if let sink { sink.send(event) } else { try? JSONOutput.printLine(event) }
    }

    // MARK: Event shapes

    struct StartedEvent: Encodable {
        struct Input: Encodable {
            var device: String
            var name: String
            var mediaType: String
            var format: String?
            var width: Int?
            var height: Int?
            var frameRate: Double?
            var sampleRate: Int?
            var channels: Int?
        }
        var event = "started"
        var time: String
        var file: String
        /// With one file per camera (%c), each camera's first file, in camera order.
        var files: [String]?
        var inputs: [Input]
        var maxDuration: Double?
        var maxSize: Int64?
        var minFreeSpace: Int64
        var streams: [String]?
    }

    struct Remaining: Encodable {
        var duration: Double?
        var size: Int64?
        var freeSpace: Int64?
    }

    package struct ProgressEvent: Encodable {
        var event = "progress"
        var time: String
        var duration: Double
        var bytes: Int64
        var frames: Int
        var audioSamples: Int
        /// Of audioSamples, the silence put where audio was lost on its way.
        var silenceInsertedSamples: Int
        var fps: Double
        var bitRate: Int
        var dropped: Int
        var paused: Bool
        var file: Int
        var remaining: Remaining
        /// With --pre-roll: what it holds now.
        var preRoll: PreRollHeld?
        var streams: [StreamStatus]?
        /// Each microphone's levels since the last progress event.
        var audioLevels: [MicrophoneLevels]?
    }

    /// What a pre-roll holds: media time from its keyframe, bytes, and
    /// what it let go to stay within --pre-roll-memory.
    struct PreRollHeld: Encodable {
        var duration: Double
        var bytes: Int
        var dropped: Int

        init(_ statistics: RecordingStatistics) {
            duration = statistics.preRollDuration.seconds
            bytes = statistics.preRollBytes
            dropped = statistics.droppedFromPreRoll
        }
    }

    struct MotionEvent: Encodable {
        var event: String
        var time: String
        /// Percent of the picture changed (for motion-ended, the highest of the event).
        var score: Double
    }

    struct StateEvent: Encodable {
        var event: String
        var time: String
        var file: String
        var duration: Double
        /// What paused or resumed it: start, signal, motion, still.
        var cause: PauseCause?
        /// With --pre-roll, on resume: the media time written from before the resume.
        var preRoll: Double?
    }

    struct CameraLostEvent: Encodable {
        var event = "camera-lost"
        let time: String
        let device: String
        let name: String
        /// Its number among the cameras (1 for the first --video).
        let camera: Int
        /// The recording's media time when it went.
        let duration: Double
    }

    package struct MarkerEvent: Encodable {
        var event = "marker"
        var time: String
        var title: String
        /// The file it is a chapter of, and where in it.
        var file: String
        var fileTime: Double
        /// Where in the whole recording (pauses left out), as `duration` counts.
        var mediaTime: Double
    }

    struct SegmentEvent: Encodable {
        var event = "segment"
        var time: String
        var file: String
        var index: Int
        var duration: Double
        var bytes: Int64
        var frames: Int
        var audioSamples: Int
        var silenceInsertedSamples: Int
        var complete: Bool
        var error: String?
        /// When the file's first sample was captured (UTC, as `time`).
        var start: String?
    }

    struct FileDeletedEvent: Encodable {
        var event = "file-deleted"
        var time: String
        var file: String
        /// What it held when it was deleted.
        var bytes: Int64
        /// keep-files, keep-size, keep-age or low-space.
        var reason: String
    }

    package struct FinishedEvent: Encodable {
        var event = "finished"
        var time: String
        package var reason: String
        package var files: [String]
        var duration: Double
        var bytes: Int64
        var frames: Int
        var dropped: Int
        var droppedByDevice: Int
        var droppedByQueue: Int
        var droppedByWriter: Int
        var droppedBeforeKeyframe: Int
        /// `dropped` by kind of media: video frames and audio sample frames.
        var droppedFrames: Int
        var droppedAudioSamples: Int
        var audioSamples: Int
        var silenceInsertedSamples: Int
        var error: String?
        var exitStatus: Int32
        var streams: [StreamStatus]?
        /// The cameras lost while the others recorded on (numbered from 1).
        var lostCameras: [Int]?
        /// With a retention: the files it deleted (the recording's and earlier
        /// ones of its template) and the bytes they held; `files` lists only
        /// those of the recording still there, `bytes` all it wrote.
        var deletedFiles: Int?
        var deletedBytes: Int64?
    }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let factor = pow(10, Double(places))
        return (self * factor).rounded() / factor
    }
}

/// Where a recording's events go instead of stdout (the service's event
/// stream, which tags each with its recording).
package protocol RecordingEventSink: Sendable {
    func send<T: Encodable>(_ event: T)
}
