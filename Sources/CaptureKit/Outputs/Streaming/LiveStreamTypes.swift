/// Where a live stream's connection stands.
public enum LiveStreamState: String, Sendable, Hashable {
    /// Not started yet, or waiting for the session to run.
    case idle
    /// The first connection is being made.
    case connecting
    /// The server has accepted the stream; media is being sent.
    case connected
    /// The connection was lost or refused; the next attempt is waiting or under way.
    case reconnecting
    /// The stream has ended.
    case finished
}

/// Why a live stream ended.
public enum LiveStreamEndReason: Sendable, Equatable {
    /// `stopStreaming()`, or the session stopped.
    case stopped
    /// The stream's inputs ended: a `file:` input reached its end, or a device went away.
    case inputEnded(CaptureEnd)
    /// `maxStreamedDuration` was reached.
    case maxDuration
    /// Something retrying cannot mend: an encoder or container that refuses
    /// the settings, or an encoder that failed.
    case failed(WriterError)
}

/// What a live stream has sent and lost so far, over all its connections.
/// Dropped media was captured but never reached the server: the queue was
/// full (the network was slower than the stream), the connection was down,
/// or the stream waited for a keyframe to start again.
public struct LiveStreamStatistics: Sendable, Equatable {
    public var state: LiveStreamState = .idle
    /// Bytes written to the network (container framing included; for RTSP,
    /// whose protocol frames the media itself, media bytes).
    public var bytesSent: Int64 = 0
    public var videoFramesSent = 0
    /// Audio samples (per channel) sent, encoded.
    public var audioSamplesSent: Int64 = 0
    public var droppedVideoFrames = 0
    public var droppedAudioSamples: Int64 = 0
    /// How long the oldest sample waiting to be sent has waited: the stream's
    /// delay behind capture on this side of the network.
    public var queueLatency: MediaTime = .zero
    /// Connections the server accepted.
    public var connections = 0
    /// Connection attempts that failed, and connections that were lost.
    public var failures = 0
    /// Media time sent, over all connections.
    public var durationSent: MediaTime = .zero
    /// The last connection failure, while reconnecting.
    public var lastError: WriterError?

    public init() {}
}

/// How a live stream connects and reconnects.
public struct LiveStreamConnectionPolicy: Sendable, Hashable {
    /// The wait before the first new attempt after a failure; each failure
    /// after it doubles the wait, up to `maximumDelay`.
    public var firstDelay: MediaTime = MediaTime(value: 500, timescale: 1000)
    public var maximumDelay: MediaTime = MediaTime(value: 8, timescale: 1)
    /// How long connecting may take, and how long one write may block (a
    /// server that stopped reading), before the connection counts as lost.
    public var timeout: MediaTime = MediaTime(value: 5, timescale: 1)
    /// How long stopping may take to send what is still queued.
    public var drainTime: MediaTime = MediaTime(value: 3, timescale: 1)

    public init() {}

    /// The wait before attempt `attempt` (1 for the first after a failure).
    func delay(beforeAttempt attempt: Int) -> MediaTime {
        let first = max(firstDelay.nanoseconds.value, 1)
        let cap = max(maximumDelay.nanoseconds.value, first)
        let doubled = first << min(max(attempt - 1, 0), 20)
        return MediaTime(value: min(doubled, cap), timescale: MonotonicClock.timescale)
    }
}

/// Hears what a live stream's connection does. Calls come one at a time on
/// the stream's own thread; return quickly. A stream whose settings are
/// refused as it starts hears `didFinishWith` on the thread that started
/// it (`startStreaming`, or the session's `startRunning()`), and a stream
/// started again from `didFinishWith`
/// has a thread of its own, whose first calls may come while that call
/// runs. The protocol does not require `Sendable`, like every delegate of
/// CaptureKit except `CaptureRecorderDelegate`.
public protocol LiveStreamOutputDelegate: AnyObject {
    /// The server accepted the stream (the first time, or again after a loss).
    func liveStreamOutputDidConnect(_ output: LiveStreamOutput)
    /// A connection attempt failed, or a connection was lost (`error` says how).
    func liveStreamOutput(_ output: LiveStreamOutput, didDisconnectWith error: WriterError)
    /// The next attempt is made after `delay`; `attempt` counts from 1 since the last connection.
    func liveStreamOutput(_ output: LiveStreamOutput, willReconnectAfter delay: MediaTime, attempt: Int)
    /// The stream ended; nothing more is sent.
    func liveStreamOutput(_ output: LiveStreamOutput, didFinishWith reason: LiveStreamEndReason, statistics: LiveStreamStatistics)
}

extension LiveStreamOutputDelegate {
    public func liveStreamOutputDidConnect(_ output: LiveStreamOutput) {}
    public func liveStreamOutput(_ output: LiveStreamOutput, didDisconnectWith error: WriterError) {}
    public func liveStreamOutput(_ output: LiveStreamOutput, willReconnectAfter delay: MediaTime, attempt: Int) {}
    public func liveStreamOutput(_ output: LiveStreamOutput, didFinishWith reason: LiveStreamEndReason, statistics: LiveStreamStatistics) {}
}
