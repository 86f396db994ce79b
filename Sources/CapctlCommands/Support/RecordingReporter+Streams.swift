import CaptureKit
import FoundationEssentials

/// `record`'s stream events: `stream-connected`, `stream-disconnected`,
/// `stream-reconnecting`, and each stream's state in `progress` and `finished`.
extension RecordingReporter {
    /// One stream's state, for `progress` and `finished`.
    package struct StreamStatus: Encodable {
        var url: String
        var state: String
        /// Bits per second sent since the last report.
        var bitRate: Int
        var bytes: Int64
        var frames: Int
        var audioSamples: Int64
        var droppedFrames: Int
        var droppedAudioSamples: Int64
        /// Seconds the oldest queued sample has waited.
        var queueLatency: Double
        var connections: Int
        var duration: Double
        var error: String?
    }

    struct StreamEvent: Encodable {
        var event: String
        var time: String
        var stream: Int
        var url: String
        var error: String?
        var attempt: Int?
        var delay: Double?
        /// Connections the server has accepted so far (2 and more: resumed).
        var connections: Int?
    }

    func streamConnected(_ index: Int, url: String, connections: Int) {
        emit(StreamEvent(event: "stream-connected", time: EventTime.now(), stream: index, url: url, connections: connections)) {
            connections > 1 ? "stream \(index) \(url): connected again" : "stream \(index) \(url): connected"
        }
    }

    func streamDisconnected(_ index: Int, url: String, error: WriterError) {
        emit(StreamEvent(event: "stream-disconnected", time: EventTime.now(), stream: index, url: url, error: error.description)) {
            "stream \(index) \(url): \(error.description)"
        }
    }

    func streamReconnecting(_ index: Int, url: String, after delay: MediaTime, attempt: Int) {
        emit(StreamEvent(event: "stream-reconnecting", time: EventTime.now(), stream: index, url: url, attempt: attempt,
                         delay: delay.seconds.rounded(toPlaces: 3))) {
            "stream \(index) \(url): trying again in \(String(cFormat: "%.1f", delay.seconds)) s (attempt \(attempt))"
        }
    }

    /// The statuses with bit rates over the time since the last call.
    static func streamStatuses(_ streams: [(url: String, statistics: LiveStreamStatistics)], previousBytes: inout [Int64],
                               elapsed: Double) -> [StreamStatus] {
        if previousBytes.count != streams.count { previousBytes = Array(repeating: 0, count: streams.count) }
        return streams.enumerated().map { index, stream in
            let statistics = stream.statistics
            let rate = elapsed > 0 ? Double(statistics.bytesSent - previousBytes[index]) * 8 / elapsed : 0
            previousBytes[index] = statistics.bytesSent
            return StreamStatus(url: stream.url, state: statistics.state.rawValue, bitRate: Int(max(0, rate)), bytes: statistics.bytesSent,
                                frames: statistics.videoFramesSent, audioSamples: statistics.audioSamplesSent,
                                droppedFrames: statistics.droppedVideoFrames, droppedAudioSamples: statistics.droppedAudioSamples,
                                queueLatency: statistics.queueLatency.seconds.rounded(toPlaces: 3), connections: statistics.connections,
                                duration: statistics.durationSent.seconds.rounded(toPlaces: 3), error: statistics.lastError?.description)
        }
    }

    /// A stream's part of the status line.
    static func streamText(_ status: StreamStatus, index: Int) -> String {
        var text = "stream \(index) \(status.state) \(String(cFormat: "%.2f Mb/s", Double(status.bitRate) / 1e6))"
        if status.droppedFrames > 0 { text += " dropped \(status.droppedFrames)" }
        if status.queueLatency >= 0.5 { text += String(cFormat: " behind %.1fs", status.queueLatency) }
        return text
    }

    /// What each stream sent and dropped, for the closing summary.
    static func streamSummary(_ status: StreamStatus, index: Int) -> String {
        "stream \(index) \(status.url): \(formatBytes(status.bytes)) sent, \(status.frames) frames, \(status.audioSamples) audio samples, "
            + "\(status.droppedFrames) frames and \(status.droppedAudioSamples) audio samples dropped, \(status.connections) connection"
            + (status.connections == 1 ? "" : "s")
    }
}
