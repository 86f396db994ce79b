@testable import CaptureKit
import Testing

/// Stamping audio chunks from device timestamps and counting overrun losses.
struct AudioCaptureTimingTests {
    let millisecond: Int64 = 1_000_000

    @Test func theFirstFrameIsAsOldAsTheFramesWaitingBeforeTheStamp() {
        // 960 frames at 48 kHz were waiting at the stamp: 20 ms of audio.
        #expect(AudioCaptureTiming.firstFrameTime(timestamp: 5_000 * millisecond, available: 960, sampleRate: 48000)
            == 4_980 * millisecond)
        #expect(AudioCaptureTiming.firstFrameTime(timestamp: 1_000, available: 0, sampleRate: 44100) == 1_000)
        #expect(AudioCaptureTiming.nanoseconds(frames: 441, sampleRate: 44100) == 10 * millisecond)
    }

    @Test func chunksThatFollowOnLoseNothing() {
        var timing = AudioCaptureTiming(sampleRate: 48000)
        #expect(timing.record(start: 0, frames: 960, afterOverrun: false) == 0)
        #expect(timing.nextStart == 20 * millisecond)
        // Jitter in the stamps is not a loss.
        #expect(timing.record(start: 21 * millisecond, frames: 960, afterOverrun: false) == 0)
    }

    @Test func anOverrunLosesTheFramesBetweenChunks() {
        var timing = AudioCaptureTiming(sampleRate: 48000)
        _ = timing.record(start: 0, frames: 960, afterOverrun: false)
        // The next chunk starts 500 ms after the previous one ended: 24000 frames lost.
        #expect(timing.record(start: 520 * millisecond, frames: 960, afterOverrun: true) == 24000)
        // A stamp earlier than expected loses nothing.
        #expect(timing.record(start: 530 * millisecond, frames: 960, afterOverrun: true) == 0)
    }

    @Test func anOverrunBeforeAnyChunkCannotBeMeasured() {
        var timing = AudioCaptureTiming(sampleRate: 48000)
        #expect(timing.record(start: 900 * millisecond, frames: 960, afterOverrun: true) == 0)
    }
}
