@testable import CaptureKit
import Testing

/// A time-lapse keeps, for each tick of the capture clock, the frame
/// nearest to it, decided one frame after the tick; ticks no frame came
/// near are missed; every frame kept is restamped on the file's time line.
@Suite struct TimeLapsePickerTests {
    static let millisecond: Int64 = 1_000_000

    /// Offers frames (named by their capture time in ms) and collects what is kept and missed.
    static func run(interval ms: Int64, frames: [Int64]) -> (kept: [(frame: Int64, tick: Int64)], missed: [Int64], keptAfter: [Int64: Int64]) {
        var picker = TimeLapsePicker<Int64>(interval: ms * millisecond)
        var kept: [(Int64, Int64)] = [], missed: [Int64] = [], keptAfter: [Int64: Int64] = [:]
        for time in frames {
            let outcome = picker.offer(time, at: 5_000 * millisecond + time * millisecond)
            if let picked = outcome.picked {
                kept.append((picked.frame, picked.tick))
                keptAfter[picked.tick] = time
            }
            missed += Array(outcome.missed)
        }
        return (kept, missed, keptAfter)
    }

    @Test func keepsTheFrameNearestEachTickThroughJitterAndMissesTheTicksOfAGap() {
        // 30 fps (33.3 ms) with up to ±8 ms of jitter, ticks every 100 ms from the first frame;
        // no frame from 520 ms to 860 ms.
        let jitter: [Int64] = [0, 6, -4, 8, -8, 2, -6, 4, 7, -3]
        var frames: [Int64] = []
        for n in 0..<40 {
            let time = Int64((Double(n) * 1000 / 30).rounded()) + (n == 0 ? 0 : jitter[n % jitter.count])
            if time > 520 && time < 860 { continue }
            frames.append(time)
        }
        let result = Self.run(interval: 100, frames: frames)
        // What the picker must keep: for each tick, the frame nearest to it (of the frames nearer to it than to any other tick).
        var expected: [(Int64, Int64)] = []
        for tick in Int64(0)...13 {
            let mine = frames.filter { (Double($0) / 100).rounded(.toNearestOrAwayFromZero) == Double(tick) }
            guard let nearest = mine.min(by: { abs($0 - tick * 100) < abs($1 - tick * 100) }) else { continue }
            expected.append((nearest, tick))
        }
        // The last tick with frames (13, at 1300 ms) waits for a frame that is no nearer, which never comes.
        let settled = expected.filter { $0.1 < 13 }
        #expect(result.kept.map(\.frame) == settled.map(\.0))
        #expect(result.kept.map(\.tick) == settled.map(\.1))
        // The gap: ticks 6, 7 and 8 (600, 700, 800 ms) had no frame within half an interval.
        #expect(result.missed == [6, 7, 8])
        #expect(!result.kept.contains { [6, 7, 8].contains($0.tick) })
        // Each frame kept was known as soon as the next frame came (never later: requests wait at most a frame).
        for (frame, tick) in result.kept {
            let next = frames[frames.firstIndex(of: frame)! + 1]
            #expect(result.keptAfter[tick] == next, "tick \(tick) was decided at \(result.keptAfter[tick] ?? -1) ms")
        }
    }

    @Test func aNearerFrameAfterTheTickWinsAndATieGoesToTheEarlier() {
        // Tick 1 at 100 ms: 90 (10 away) loses to 103 (3 away); 106 is farther and settles it.
        #expect(Self.run(interval: 100, frames: [0, 40, 90, 103, 106, 150]).kept.map(\.frame) == [0, 103])
        // 95 and 105 are as near: the earlier is kept.
        #expect(Self.run(interval: 100, frames: [0, 95, 105, 160]).kept.map(\.frame) == [0, 95])
    }

    @Test func framesRarerThanTheTicksLeaveTicksMissedButKeepEachFrameOnce() {
        // A frame every 250 ms against ticks every 100 ms: each frame is its nearest tick's.
        let result = Self.run(interval: 100, frames: [0, 250, 500, 750, 1000])
        #expect(result.kept.map(\.frame) == [0, 250, 500, 750])
        #expect(result.kept.map(\.tick) == [0, 3, 5, 8])
        #expect(result.missed == [1, 2, 4, 6, 7, 9])
    }

    @Test func keptFramesAreRestampedTickByTickAtTheFileRate() {
        let frames = TimeLapseFrames(TimeLapse(interval: MediaTime(value: 1, timescale: 10), framesPerSecond: 30))
        var kept: [MediaTime] = []
        let origin: Int64 = 7_000_000_000
        for n in 0..<61 {
            let storage = SampleStorage(copying: UnsafeRawBufferPointer(start: nil, count: 0))
            let frame = VideoSampleBuffer(storage: storage, layout: .raw(.yuv420p, bytesPerRow: nil), width: 1, height: 1,
                                          presentationTime: MediaTime(value: origin + Int64(n) * 1_000_000_000 / 30, timescale: 1_000_000_000),
                                          duration: MediaTime(value: 1, timescale: 30), sequence: UInt64(n))
            if let out = frames.take(frame, input: 0) {
                #expect(out.sequence % 3 == 0, "kept capture frame \(out.sequence)")
                #expect(out.duration == MediaTime(value: 1, timescale: 30))
                kept.append(out.presentationTime)
            }
        }
        // 2 s of capture at a tick every 0.1 s: ticks 0…19 settled, 1/30 s apart from the first frame's time.
        #expect(kept.count == 20)
        for (k, time) in kept.enumerated() {
            let expected = Double(origin) / 1e9 + Double(k) / 30
            #expect(abs(time.seconds - expected) < 1e-6, "frame \(k) at \(time.seconds)")
        }
        #expect(frames.misses.lost(from: .negativeInfinity, before: nil) == 0)
    }

    @Test func framesPerSecondBecomeExactFrameDurations() {
        #expect(TimeLapse.frameDuration(framesPerSecond: 30) == MediaTime(value: 1, timescale: 30))
        #expect(TimeLapse.frameDuration(framesPerSecond: 30000.0 / 1001) == MediaTime(value: 1001, timescale: 30000))
        #expect(TimeLapse.frameDuration(framesPerSecond: 12.5) == MediaTime(value: 1000, timescale: 12500))
        #expect(TimeLapse(interval: MediaTime(value: 60, timescale: 1), framesPerSecond: 30).speedUp == 1800)
    }
}
