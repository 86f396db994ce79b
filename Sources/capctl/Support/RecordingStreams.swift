import CaptureKit
import FoundationEssentials

/// The `--stream` outputs of a `record`: one `LiveStreamOutput` for each,
/// their events turned into report lines, and the rules of the command line
/// around them (a required stream that fails ends the recording; without a
/// file, the recording ends when the streams do).
final class RecordingStreams: LiveStreamOutputDelegate, @unchecked Sendable {
    // @unchecked: `failure`, `ended` and `previousBytes` are guarded by `lock`; the rest is immutable.
    let outputs: [LiveStreamOutput]
    private let reporter: RecordingReporter
    private let required: Bool
    /// No file is recorded: the recording ends when the streams do.
    private let withoutFile: Bool
    private let lock = Lock()
    private var failure: String?
    private var ended: [LiveStreamEndReason] = []
    private var previousBytes: [Int64] = []
    private var lastReport = MonotonicClock.nowNanoseconds()
    /// Heard when a required stream fails, or (without a file) when every stream has ended.
    private let onEnd: @Sendable () -> Void

    init(_ request: StreamRequest, fileSettings: RecordingSettings, maxDuration: MediaTime?, reporter: RecordingReporter,
         onEnd: @escaping @Sendable () -> Void) {
        outputs = request.destinations.map { destination in
            let output = LiveStreamOutput(destination: destination)
            output.settings = request.options.settings(from: fileSettings, fileType: request.fileType, format: destination.format)
            if let interval = request.options.streamKeyframeInterval?.time { output.keyframeInterval = interval }
            if let timeout = request.options.streamTimeout?.time { output.connectionPolicy.timeout = timeout }
            // The streams end where the file does (and, without a file, the recording with them).
            if let maxDuration { output.maxStreamedDuration = maxDuration }
            return output
        }
        self.reporter = reporter
        required = request.options.streamRequired
        withoutFile = request.withoutFile
        self.onEnd = onEnd
    }

    var urls: [String] { outputs.map(\.destination.description) }

    func start(on session: CaptureSession) {
        for output in outputs {
            session.addOutput(output)
            output.startStreaming(delegate: self)
        }
    }

    func stop() {
        for output in outputs { output.stopStreaming() }
    }

    func waitUntilFinished() {
        for output in outputs { output.waitUntilFinished() }
    }

    /// Why a stream refused to start (settings it cannot carry), if one did.
    var refusal: String? {
        lock.withLock {
            for reason in ended { if case .failed(let error) = reason { return error.description } }
            return nil
        }
    }

    /// Without a file: the media time the streams have taken so far, for the status line and the limit.
    var capturedStatistics: RecordingStatistics {
        var statistics = RecordingStatistics()
        statistics.duration = outputs.map(\.statistics.durationSent).max() ?? .zero
        return statistics
    }

    /// Why a required stream ended the recording, if one did.
    var requiredFailure: String? { lock.withLock { failure } }

    /// Why the streams ended, once all have (for a recording without a file).
    var endReason: (RecordingStopReason, String?) {
        let reasons = lock.withLock { ended }
        if let failure = requiredFailure { return (.error, failure) }
        for reason in reasons {
            switch reason {
            case .failed(let error): return (.error, error.description)
            case .inputEnded(.deviceLost(let text)): return (.deviceDisconnected, text)
            case .inputEnded(.failed(let error)): return (.error, error.description)
            default: continue
            }
        }
        if reasons.contains(.maxDuration) { return (.maxDuration, nil) }
        if reasons.contains(.inputEnded(.endOfInput)) { return (.endOfInput, nil) }
        return (.stopped, nil)
    }

    /// Each stream's state now, bit rates over the time since the last call.
    func statuses() -> [RecordingReporter.StreamStatus] {
        let now = MonotonicClock.nowNanoseconds()
        let streams = outputs.map { (url: $0.destination.description, statistics: $0.statistics) }
        return lock.withLock {
            let elapsed = Double(now - lastReport) / 1e9
            lastReport = now
            return RecordingReporter.streamStatuses(streams, previousBytes: &previousBytes, elapsed: elapsed)
        }
    }

    private func index(of output: LiveStreamOutput) -> Int {
        (outputs.firstIndex { $0 === output } ?? 0) + 1
    }

    // MARK: LiveStreamOutputDelegate

    func liveStreamOutputDidConnect(_ output: LiveStreamOutput) {
        reporter.streamConnected(index(of: output), url: output.destination.description, connections: output.statistics.connections)
    }

    func liveStreamOutput(_ output: LiveStreamOutput, didDisconnectWith error: WriterError) {
        let number = index(of: output)
        reporter.streamDisconnected(number, url: output.destination.description, error: error)
        guard required else { return }
        let first = lock.withLock { () -> Bool in
            guard failure == nil else { return false }
            failure = "stream \(number) \(output.destination): \(error.description) (--stream-required)"
            return true
        }
        if first { onEnd() }
    }

    func liveStreamOutput(_ output: LiveStreamOutput, willReconnectAfter delay: MediaTime, attempt: Int) {
        // A required stream is not retried: the recording ends instead.
        if required {
            output.stopStreaming()
            return
        }
        reporter.streamReconnecting(index(of: output), url: output.destination.description, after: delay, attempt: attempt)
    }

    func liveStreamOutput(_ output: LiveStreamOutput, didFinishWith reason: LiveStreamEndReason, statistics: LiveStreamStatistics) {
        if case .failed(let error) = reason { reporter.streamDisconnected(index(of: output), url: output.destination.description, error: error) }
        let all = lock.withLock { () -> Bool in
            ended.append(reason)
            if required, failure == nil, case .failed(let error) = reason {
                failure = "stream \(index(of: output)) \(output.destination): \(error.description) (--stream-required)"
            }
            return ended.count == outputs.count
        }
        // With a file, the file's limits end the recording; the streams end with it.
        if (all && withoutFile) || requiredFailure != nil { onEnd() }
    }
}

/// What `record` was asked to stream, parsed and checked.
struct StreamRequest {
    var destinations: [StreamDestination]
    var options: StreamingOptions
    /// The file's container, when there is a file (its usual codec is the file's video).
    var fileType: FileType?
    /// No file is recorded: the streams are the recording.
    var withoutFile: Bool
}
