import Glibc
import Testing
@testable import CaptureKit

/// The test pattern and the test tone start their clocks where the session
/// says, so that they begin together however late each capture thread runs.
struct SessionClockedSourceTests {
    /// The first sample's capture time of `source`, opened, given the session's
    /// clock start as a session does, and run `delay` microseconds later until it delivers one.
    static func firstTime(of source: any CaptureSource, clockStart: Int64, afterWaiting delay: UInt32 = 0) throws -> MediaTime? {
        try source.open()
        defer { source.close() }
        (source as? any SessionClockedSource)?.startClock(at: clockStart)
        usleep(delay)
        let stop = CaptureStopSignal()
        var first: MediaTime?
        _ = source.run(stop: stop) { sample in
            if first == nil { first = sample.presentationTime }
            stop.raise()
        }
        return first
    }

    /// Started 30 ms after the session's start (a thread that came late), each
    /// source's first sample is stamped at the session's start, not at its own.
    @Test(arguments: ["pattern", "tone"])
    func aLateThreadStartsAtTheSessionsTime(kind: String) throws {
        let source: any CaptureSource = kind == "pattern" ? TestPatternSource() : TestToneSource()
        let sessionStart = MonotonicClock.nowNanoseconds()
        let first = try #require(try Self.firstTime(of: source, clockStart: sessionStart, afterWaiting: 30_000))
        #expect(first.value == sessionStart, "\(first.value - sessionStart) ns after the session's start")
    }

    /// A start long past (a thread that came to run a second late) is not taken:
    /// the source starts at its own time rather than deliver a burst of what it missed.
    @Test func aStartLongPastIsNotTaken() throws {
        let source = TestToneSource()
        let before = MonotonicClock.nowNanoseconds()
        let first = try #require(try Self.firstTime(of: source, clockStart: before - 1_000_000_000))
        #expect(first.value >= before)
    }

    /// In a session, the pattern and the tone begin at the same moment.
    @Test func aPatternAndAToneInASessionBeginTogether() throws {
        let pattern = TestPatternSource()
        let tone = TestToneSource()
        let session = CaptureSession()
        let inputs = [CaptureInput(source: pattern), CaptureInput(source: tone)]
        for input in inputs { session.addInput(input) }
        let output = VideoAndAudioFirstTimes()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        let deadline = MonotonicClock.nowNanoseconds() + 10_000_000_000
        while output.times.count < 2, MonotonicClock.nowNanoseconds() < deadline { usleep(2_000) }
        let times = output.times
        try #require(times.count == 2, "first samples: \(times)")
        #expect(times[.video] == times[.audio], "video at \(String(describing: times[.video])), audio at \(String(describing: times[.audio]))")
    }
}

/// Keeps the capture time of the first sample of each media type it is sent.
final class VideoAndAudioFirstTimes: CaptureOutput, @unchecked Sendable {
    // @unchecked: `first` is read and written under `lock` alone.
    private let lock = Locked<[MediaType: MediaTime]>([:])

    override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        lock.withLock { first in
            if first[sample.mediaType] == nil { first[sample.mediaType] = sample.presentationTime }
        }
    }

    var times: [MediaType: MediaTime] { lock.withLock { $0 } }
}
