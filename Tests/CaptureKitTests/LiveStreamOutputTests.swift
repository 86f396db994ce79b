import Foundation
import Testing
@testable import CaptureKit

/// LiveStreamOutput on a running session, next to a movie output: one
/// encoder for both when their settings agree, its own otherwise; what it
/// sends and drops; and the URLs it takes.
@Suite struct LiveStreamOutputTests {
    typealias Camera = SessionLifecycleTests.TickingCamera
    typealias Recorder = SessionLifecycleTests.Recorder
    let lifecycle = SessionLifecycleTests()

    /// Hears the stream's events.
    final class StreamDelegate: LiveStreamOutputDelegate, @unchecked Sendable {
        private let condition = NSCondition()
        private(set) var connections = 0
        private(set) var errors: [WriterError] = []
        private(set) var reconnects: [(MediaTime, Int)] = []
        private(set) var end: (LiveStreamEndReason, LiveStreamStatistics)?

        func liveStreamOutputDidConnect(_ output: LiveStreamOutput) { update { connections += 1 } }
        func liveStreamOutput(_ output: LiveStreamOutput, didDisconnectWith error: WriterError) { update { errors.append(error) } }
        func liveStreamOutput(_ output: LiveStreamOutput, willReconnectAfter delay: MediaTime, attempt: Int) { update { reconnects.append((delay, attempt)) } }
        func liveStreamOutput(_ output: LiveStreamOutput, didFinishWith reason: LiveStreamEndReason, statistics: LiveStreamStatistics) {
            update { end = (reason, statistics) }
        }

        private func update(_ change: () -> Void) {
            condition.lock()
            change()
            condition.broadcast()
            condition.unlock()
        }

        func wait(seconds: Double = 10, until done: (StreamDelegate) -> Bool) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: seconds)
            while !done(self) { if !condition.wait(until: deadline) { return false } }
            return true
        }
    }

    /// A UDP destination on loopback: datagrams go out whether anyone reads them or not.
    func udpDestination() throws -> StreamDestination {
        try StreamDestination("udp://127.0.0.1:\(Int.random(in: 20000...60000))")
    }

    func waitForStreamFrames(_ output: LiveStreamOutput, _ frames: Int) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while output.statistics.videoFramesSent < frames {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        return true
    }

    @Test func aStreamWithTheMovieSettingsSharesItsEncoder() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        let input = CaptureInput(source: Camera())
        session.addInput(input)
        let movie = MovieFileOutput()
        let stream = LiveStreamOutput(destination: try udpDestination())
        stream.settings = movie.settings
        session.addOutput(movie)
        session.addOutput(stream)
        try session.startRunning()
        defer { session.stopRunning() }

        let recorder = Recorder(), delegate = StreamDelegate()
        movie.startRecording(to: scratch.file("movie.mp4"), recordingDelegate: recorder)
        stream.startStreaming(delegate: delegate)
        #expect(delegate.wait { $0.connections == 1 })
        #expect(waitForStreamFrames(stream, 20))
        #expect(lifecycle.waitForFrames(movie, 20))
        #expect(input.compression.count == 1, "one encoder feeds the movie and the stream")
        #expect(stream.isStreaming)
        #expect(stream.statistics.state == .connected)

        stream.stopStreaming()
        stream.waitUntilFinished()
        #expect(delegate.wait { $0.end != nil })
        #expect(!stream.isStreaming)
        let (reason, statistics) = try #require(delegate.end)
        #expect(reason == .stopped)
        #expect(statistics.state == .finished)
        #expect(statistics.droppedVideoFrames == 0)
        #expect(statistics.bytesSent > 0)
        // 20 ms frames: the media time sent is the frames' own.
        #expect(abs(statistics.durationSent.seconds - Double(statistics.videoFramesSent) * 0.02) < 0.0011)
        #expect(input.compression.count == 1, "the movie still records with the encoder")
        movie.stopRecording()
        #expect(recorder.waitForEnd())
        #expect(input.compression.count == 0)
    }

    @Test func aStreamAtAnotherRateGetsItsOwnEncoder() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        let input = CaptureInput(source: Camera())
        session.addInput(input)
        let movie = MovieFileOutput()
        let stream = LiveStreamOutput(destination: try udpDestination())
        stream.settings.videoBitRate = 300_000
        stream.settings.maxBitRate = 300_000
        session.addOutput(movie)
        session.addOutput(stream)
        let recorder = Recorder(), delegate = StreamDelegate()
        movie.startRecording(to: scratch.file("movie.mkv"), recordingDelegate: recorder)
        stream.startStreaming(delegate: delegate)
        try session.startRunning()
        #expect(waitForStreamFrames(stream, 10))
        #expect(input.compression.count == 2)
        session.stopRunning()
        movie.waitUntilFinished()
        stream.waitUntilFinished()
        #expect(delegate.end?.0 == .stopped)
        #expect(input.compression.count == 0)
    }

    @Test func settingsAStreamCannotCarryEndItBeforeItBegins() throws {
        let session = CaptureSession()
        session.addInput(CaptureInput(source: Camera()))
        let stream = LiveStreamOutput(destination: try StreamDestination("rtmp://127.0.0.1:1/live/x"))
        stream.settings.video = .encode(.hevc)
        session.addOutput(stream)
        let delegate = StreamDelegate()
        stream.startStreaming(delegate: delegate)
        #expect(throws: CaptureError.self) { try session.startRunning() }
        guard case .failed(let error)? = delegate.end?.0 else {
            Issue.record("the stream did not end with the refusal")
            return
        }
        #expect(error.description.contains("cannot carry hevc"))
    }

    @Test func aStreamNobodyTakesRetriesWithGrowingWaits() throws {
        let session = CaptureSession()
        let input = CaptureInput(source: Camera())
        session.addInput(input)
        // Port 1 on loopback: refused at once.
        let stream = LiveStreamOutput(destination: try StreamDestination("rtmp://127.0.0.1:1/live/x"))
        stream.connectionPolicy.firstDelay = MediaTime(value: 50, timescale: 1000)
        stream.connectionPolicy.maximumDelay = MediaTime(value: 200, timescale: 1000)
        session.addOutput(stream)
        let delegate = StreamDelegate()
        stream.startStreaming(delegate: delegate)
        try session.startRunning()
        #expect(delegate.wait { $0.reconnects.count >= 4 })
        session.stopRunning()
        stream.waitUntilFinished()
        #expect(delegate.connections == 0)
        #expect(delegate.reconnects.prefix(4).map { $0.0.seconds } == [0.05, 0.1, 0.2, 0.2])
        #expect(delegate.reconnects.prefix(4).map(\.1) == [1, 2, 3, 4])
        let statistics = try #require(delegate.end?.1)
        #expect(statistics.connections == 0)
        #expect(statistics.videoFramesSent == 0)
        #expect(statistics.droppedVideoFrames > 0, "frames captured while no server took them count as dropped")
        #expect(statistics.failures == delegate.errors.count)
    }

    @Test func maxStreamedDurationEndsTheStream() throws {
        let session = CaptureSession()
        session.addInput(CaptureInput(source: Camera()))
        let stream = LiveStreamOutput(destination: try udpDestination())
        stream.maxStreamedDuration = MediaTime(value: 1, timescale: 2)
        session.addOutput(stream)
        let delegate = StreamDelegate()
        stream.startStreaming(delegate: delegate)
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.wait { $0.end != nil })
        let (reason, statistics) = try #require(delegate.end)
        #expect(reason == .maxDuration)
        #expect(statistics.videoFramesSent == 25, "0.5 s of 20 ms frames")
        #expect(statistics.droppedVideoFrames == 0)
    }

    // MARK: Destinations

    @Test(arguments: [
        ("rtmp://server/live/key", "rtmp", "server", nil as Int?, StreamFormat.flv),
        ("rtmps://user:pw@server:443/app/key", "rtmps", "server", 443, .flv),
        ("srt://10.0.0.2:8890?streamid=x", "srt", "10.0.0.2", 8890, .mpegts),
        ("udp://[::1]:5000", "udp", "::1", 5000, .mpegts),
        ("RTSP://cam.local:8554/x", "rtsp", "cam.local", 8554, .rtsp),
    ])
    func destinationsParse(url: String, scheme: String, host: String, port: Int?, format: StreamFormat) throws {
        let destination = try StreamDestination(url)
        #expect(destination.scheme == scheme)
        #expect(destination.host == host)
        #expect(destination.port == port)
        #expect(destination.format == format)
    }

    @Test func theFormatCanBeChosenWithinWhatTheSchemeCarries() throws {
        #expect(try StreamDestination("srt://server:9000", format: .flv).format == .flv)
        #expect(throws: StreamDestinationError.format("rtmp://server/live/key", format: .mpegts)) {
            try StreamDestination("rtmp://server/live/key", format: .mpegts)
        }
        #expect(throws: StreamDestinationError.format("rtsp://s/x", format: .flv)) { try StreamDestination("rtsp://s/x", format: .flv) }
        #expect(throws: StreamDestinationError.format("srt://s:1", format: .rtsp)) { try StreamDestination("srt://s:1", format: .rtsp) }
    }

    @Test func badDestinationsAreRefused() {
        #expect(throws: StreamDestinationError.scheme("http://s/x", scheme: "http")) { try StreamDestination("http://s/x") }
        #expect(throws: StreamDestinationError.malformed("server/live")) { try StreamDestination("server/live") }
        #expect(throws: StreamDestinationError.host("rtmp:///live")) { try StreamDestination("rtmp:///live") }
        #expect(throws: StreamDestinationError.host("rtmp://a b/live")) { try StreamDestination("rtmp://a b/live") }
        #expect(throws: StreamDestinationError.port("udp://host")) { try StreamDestination("udp://host") }
        #expect(throws: StreamDestinationError.port("rtmp://host:0/x")) { try StreamDestination("rtmp://host:0/x") }
        #expect(throws: StreamDestinationError.self) { try StreamDestination("rtmp://no-such-host.invalid/x").resolveHost() }
        #expect(throws: Never.self) { try StreamDestination("rtmp://127.0.0.1/x").resolveHost() }
    }

    @Test func malformedURLsAreShownWithoutTheirKeys() {
        #expect(StreamDestination.redacted("rtmp://h:99999/live/SECRET") == "rtmp://h:99999/live/…")
        #expect(!StreamDestinationError.port("rtmp://h:99999/live/SECRET").description.contains("SECRET"))
        #expect(!StreamDestinationError.host("rtmp://u:SECRET@/live").description.contains("SECRET"))
    }

    @Test func descriptionsLeaveSecretsOut() throws {
        #expect(try StreamDestination("rtmp://a.example/live2/abcd-SECRET").description == "rtmp://a.example/live2/…")
        #expect(try StreamDestination("rtmps://u:pw@a.example:443/app/key").description == "rtmps://a.example:443/app/…")
        #expect(try StreamDestination("srt://h:9000?passphrase=SECRET").description == "srt://h:9000?…")
        #expect(try StreamDestination("udp://h:5000").description == "udp://h:5000")
    }

    @Test func reconnectionWaitsDoubleUpToTheMaximum() {
        var policy = LiveStreamConnectionPolicy()
        #expect((1...7).map { policy.delay(beforeAttempt: $0).seconds } == [0.5, 1, 2, 4, 8, 8, 8])
        policy.firstDelay = MediaTime(value: 3, timescale: 1)
        policy.maximumDelay = MediaTime(value: 1, timescale: 1)
        #expect(policy.delay(beforeAttempt: 1).seconds == 3, "a maximum below the first wait keeps the first")
    }
}
