@testable import CaptureKit
import Testing

/// The driver timestamp clock decision, sequence gaps and fourcc mappings.
struct CaptureTimingTests {
    typealias Clock = V4L2TimestampClock
    let second: Int64 = 1_000_000_000
    /// A monotonic "now" (minutes since boot) and a realtime "now" (2024).
    let monotonicNow: Int64 = 600 * 1_000_000_000
    let realtimeNow: Int64 = 1_700_000_000 * 1_000_000_000

    @Test func monotonicStampsAreUsedAsTheyAre() {
        #expect(Clock.decide(flags: Clock.timestampMonotonic, timestamp: monotonicNow - second / 30,
                             monotonicNow: monotonicNow, realtimeNow: realtimeNow) == .monotonic)
        var clock = Clock()
        let stamp = clock.monotonicTime(flags: Clock.timestampMonotonic, timestamp: monotonicNow - 5_000_000,
                                        monotonicNow: monotonicNow, realtimeNow: realtimeNow)
        #expect(stamp == monotonicNow - 5_000_000)
        #expect(clock.mode == .monotonic)
    }

    @Test func copiedAndUnknownStampsAreReplacedByTheDequeueTime() {
        #expect(Clock.decide(flags: Clock.timestampCopy, timestamp: monotonicNow,
                             monotonicNow: monotonicNow, realtimeNow: realtimeNow) == .dequeueTime)
        #expect(Clock.decide(flags: Clock.timestampUnknown, timestamp: 0,
                             monotonicNow: monotonicNow, realtimeNow: realtimeNow) == .dequeueTime)
        #expect(Clock.decide(flags: Clock.timestampUnknown, timestamp: 12_345,
                             monotonicNow: monotonicNow, realtimeNow: realtimeNow) == .dequeueTime)
        var clock = Clock()
        #expect(clock.monotonicTime(flags: Clock.timestampCopy, timestamp: 42, monotonicNow: monotonicNow, realtimeNow: realtimeNow)
            == monotonicNow)
    }

    @Test func unknownStampsNearMonotonicAreMonotonic() {
        #expect(Clock.decide(flags: Clock.timestampUnknown, timestamp: monotonicNow - 2 * second,
                             monotonicNow: monotonicNow, realtimeNow: realtimeNow) == .monotonic)
    }

    @Test func realtimeStampsAreShiftedOntoTheMonotonicClock() {
        let offset = monotonicNow - realtimeNow
        #expect(Clock.decide(flags: Clock.timestampUnknown, timestamp: realtimeNow - second / 10,
                             monotonicNow: monotonicNow, realtimeNow: realtimeNow) == .realtime(offset: offset))
        // A driver that claims monotonic but stamps realtime.
        #expect(Clock.decide(flags: Clock.timestampMonotonic, timestamp: realtimeNow,
                             monotonicNow: monotonicNow, realtimeNow: realtimeNow) == .realtime(offset: offset))
        var clock = Clock()
        let first = clock.monotonicTime(flags: 0, timestamp: realtimeNow - second / 10, monotonicNow: monotonicNow, realtimeNow: realtimeNow)
        #expect(first == monotonicNow - second / 10)
        // Decided once: the next frame uses the same offset.
        let next = clock.monotonicTime(flags: 0, timestamp: realtimeNow + second / 30,
                                       monotonicNow: monotonicNow + second / 10, realtimeNow: realtimeNow + 7 * second)
        #expect(next == monotonicNow + second / 30)
    }

    @Test func implausibleStampsAfterTheDecisionFallBackToTheDequeueTime() {
        var clock = Clock()
        _ = clock.monotonicTime(flags: Clock.timestampMonotonic, timestamp: monotonicNow, monotonicNow: monotonicNow, realtimeNow: realtimeNow)
        let wrapped = clock.monotonicTime(flags: Clock.timestampMonotonic, timestamp: 3, monotonicNow: monotonicNow + second,
                                          realtimeNow: realtimeNow + second)
        #expect(wrapped == monotonicNow + second)
        #expect(clock.replacedStamps == 1)
        #expect(clock.mode == .monotonic)
    }

    @Test func stampsBeforeTheStreamStartedMoveToItsStart() {
        let streamStart = monotonicNow - second / 2
        let tolerance = second / 30 + 10_000_000
        func time(_ clock: inout Clock, _ stamp: Int64) -> Int64 {
            clock.monotonicTime(flags: Clock.timestampMonotonic, timestamp: stamp, monotonicNow: monotonicNow,
                                realtimeNow: realtimeNow, streamStart: streamStart, tolerance: tolerance)
        }
        var clock = Clock()
        // A buffer left by another reader, written 4 s before STREAMON: moved to the start.
        #expect(time(&clock, streamStart - 4 * second) == streamStart)
        #expect(clock.replacedStamps == 1)
        // A second leftover never goes before what was handed out already.
        #expect(time(&clock, streamStart - 2 * second) == streamStart + 1)
        // The frame being exposed as streaming began (within the tolerance) stays after them.
        #expect(time(&clock, streamStart - tolerance + 1) == streamStart + 2)
        #expect(clock.replacedStamps == 2)
        // Then stamps are the driver's again.
        #expect(time(&clock, streamStart + second / 30) == streamStart + second / 30)
        // Alone, such a frame keeps its stamp.
        var exposed = Clock()
        #expect(time(&exposed, streamStart - tolerance + 1) == streamStart - tolerance + 1)
        #expect(exposed.replacedStamps == 0)
        // Without a stream start, the old rule alone: plausible stamps are kept.
        var unguarded = Clock()
        #expect(unguarded.monotonicTime(flags: Clock.timestampMonotonic, timestamp: streamStart - 4 * second,
                                        monotonicNow: monotonicNow, realtimeNow: realtimeNow) == streamStart - 4 * second)
    }

    @Test func sequenceGapsCountLostFrames() {
        var counter = SequenceGapCounter()
        #expect(counter.record(10) == 0)
        #expect(counter.record(11) == 0)
        #expect(counter.record(14) == 2)
        #expect(counter.record(14) == 0)
        #expect(counter.record(20) == 5)
        #expect(counter.lost == 7)
        #expect(counter.extended == 20)
    }

    @Test func sequenceNumbersWrapAndRestartWithoutInventedLosses() {
        var counter = SequenceGapCounter()
        counter.record(UInt32.max - 1)
        #expect(counter.record(UInt32.max) == 0)
        #expect(counter.record(1) == 1)
        #expect(counter.extended == UInt64(UInt32.max) + 2)
        // A driver restarting its count is not four billion lost frames.
        #expect(counter.record(0) == 0)
        #expect(counter.lost == 1)
        #expect(counter.extended == UInt64(UInt32.max) + 3)
    }

    @Test func fourccsMapToPixelFormatsAndCodecs() {
        let expected: [(String, String)] = [
            ("YUYV", "yuyv422"), ("UYVY", "uyvy422"), ("NV12", "nv12"), ("NV21", "nv21"), ("YU12", "yuv420p"),
            ("RGB3", "rgb24"), ("BGR3", "bgr24"), ("GREY", "gray"), ("RGBP", "rgb565le"), ("Y16 ", "gray16le"),
            ("AR24", "bgra"), ("XR24", "bgr0"), ("BA24", "argb"), ("AB24", "rgba"),
        ]
        for (code, name) in expected {
            #expect(V4L2PixelMapping.pixelFormat(for: FourCC(code)!)?.name == name, "\(code)")
            #expect(V4L2PixelMapping.isReadable(FourCC(code)!), "\(code)")
        }
        #expect(V4L2PixelMapping.codecName(for: FourCC("MJPG")!) == "mjpeg")
        #expect(V4L2PixelMapping.codecName(for: FourCC("JPEG")!) == "mjpeg")
        #expect(V4L2PixelMapping.codecName(for: FourCC("H264")!) == "h264")
        #expect(V4L2PixelMapping.codecName(for: FourCC("HEVC")!) == "hevc")
        #expect(V4L2PixelMapping.pixelFormat(for: FourCC("MJPG")!) == nil)
        for bayer in ["BA81", "GBRG", "GRBG", "RGGB"] {
            #expect(V4L2PixelMapping.isBayer(FourCC(bayer)!))
            #expect(V4L2PixelMapping.needsConversion(FourCC(bayer)!))
            #expect(V4L2PixelMapping.pixelFormat(for: FourCC(bayer)!) == nil)
        }
        #expect(V4L2PixelMapping.needsConversion(FourCC("YV12")!))
        #expect(!V4L2PixelMapping.isReadable(FourCC("Y41P")!))
    }

    @Test func onlyFlaggedFramesOfInterCodecsAreKeyframes() {
        #expect(V4L2BufferFlags.isKeyframe(V4L2BufferFlags.keyframe | Clock.timestampMonotonic))
        #expect(!V4L2BufferFlags.isKeyframe(V4L2BufferFlags.predictedFrame))
        #expect(!V4L2BufferFlags.isKeyframe(0))
    }
}
