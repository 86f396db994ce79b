@testable import CaptureKit
import Testing

struct MediaTimeTests {
    @Test func equalityAndOrderAcrossTimescales() {
        #expect(MediaTime(value: 1, timescale: 2) == MediaTime(value: 500, timescale: 1000))
        #expect(MediaTime(value: 1001, timescale: 30000) < MediaTime(value: 1, timescale: 29))
        #expect(MediaTime.negativeInfinity < MediaTime(value: Int64.min, timescale: 1))
        #expect(MediaTime(value: Int64.max, timescale: 1) < .positiveInfinity)
        #expect(MediaTime.positiveInfinity < .indefinite)
        #expect(MediaTime(value: 1, timescale: 0) == .invalid)
        #expect(Set([MediaTime(value: 1, timescale: 2), MediaTime(value: 2, timescale: 4)]).count == 1)
    }

    @Test func exactArithmeticOnACommonTimescale() throws {
        let frame = MediaTime(value: 1001, timescale: 30000)
        let sample = MediaTime(value: 1, timescale: 48000)
        let sum = frame + sample
        #expect(sum == MediaTime(value: 1001 * 8 + 5, timescale: 240000))
        #expect(sum - sample == frame)
        #expect(frame * 30 == MediaTime(value: 30030, timescale: 30000))
        #expect(try frame.checkedAdding(frame).value == 2002)
    }

    @Test func overflowIsNeverSilent() {
        let big = MediaTime(value: Int64.max, timescale: 1)
        #expect((big + MediaTime(value: 1, timescale: 1)) == .invalid)
        #expect(throws: MediaTime.ArithmeticError.overflow) { try big.checkedAdding(MediaTime(value: 1, timescale: 1)) }
        #expect(throws: MediaTime.ArithmeticError.overflow) { try big.checkedMultiplying(by: 2) }
        // Timescales whose least common multiple exceeds Int32: the checked sum
        // says so; the operator rounds to the finer timescale, as CMTimeAdd does.
        let a = MediaTime(value: 1, timescale: 65_537), b = MediaTime(value: 65_536, timescale: 65_539)
        #expect(throws: MediaTime.ArithmeticError.overflow) { try a.checkedAdding(b) }
        let sum = a + b
        #expect(sum.timescale == 65_539)
        #expect(abs(sum.seconds - (a.seconds + b.seconds)) <= 0.5 / 65_539)
        // Nanosecond capture stamps plus an audio buffer's length in 1/48000 s.
        let stamp = MediaTime(value: 2_172_410_831_683, timescale: 1_000_000_000)
        #expect((stamp + MediaTime(value: 1024, timescale: 48_000)).value == 2_172_410_831_683 + 21_333_333)
        #expect(MediaTime(value: 65_536, timescale: 65_537) + MediaTime(value: 1, timescale: 65_537) == MediaTime(value: 1, timescale: 1))
    }

    @Test func specialValues() {
        let one = MediaTime(value: 1, timescale: 1)
        #expect(one + .positiveInfinity == .positiveInfinity)
        #expect(one - .positiveInfinity == .negativeInfinity)
        #expect(MediaTime.positiveInfinity - .positiveInfinity == .invalid)
        #expect(one + .indefinite == .indefinite)
        #expect(one + .invalid == .invalid)
        #expect(MediaTime.indefinite.seconds.isNaN)
        #expect(MediaTime.invalid.description == "invalid")
    }

    @Test func conversionRoundsToNearest() {
        #expect(MediaTime(value: 1001, timescale: 30000).converted(toTimescale: 90000) == MediaTime(value: 3003, timescale: 90000))
        #expect(MediaTime(value: 1, timescale: 3).converted(toTimescale: 1000).value == 333)
        #expect(MediaTime(value: 2, timescale: 3).converted(toTimescale: 1000).value == 667)
        #expect(MediaTime(value: -2, timescale: 3).converted(toTimescale: 1000).value == -667)
        #expect(MediaTime(value: Int64.max, timescale: 1).converted(toTimescale: 1000) == .invalid)
        #expect(MediaTime(seconds: 2.5, preferredTimescale: 600) == MediaTime(value: 1500, timescale: 600))
        #expect(MediaTime(seconds: .nan, preferredTimescale: 600) == .invalid)
    }
}
