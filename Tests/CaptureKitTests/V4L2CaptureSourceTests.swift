import Foundation
import Glibc
import Testing
@testable import CaptureKit

/// The V4L2 capture source over a fake camera whose driver fills buffers on
/// a script: the real capture loop, buffer queue and poll(), without a device.
@Suite struct V4L2CaptureSourceTests {
    typealias Step = FakeV4L2Camera.Step

    /// What a test keeps of a delivered frame (not the frame: holding it
    /// would keep its buffer from going back to the driver).
    struct Seen: Equatable {
        var number: UInt8
        var sequence: UInt64
        var time: Int64
        var isKeyframe: Bool
        var bytes: [UInt8]
    }

    /// Runs the capture loop on this thread until it has delivered `count`
    /// frames or ended by itself; a watchdog stops it after 10 s.
    func capture(_ source: V4L2CaptureSource, count: Int? = nil) -> (end: CaptureEnd, frames: [Seen]) {
        let stop = CaptureStopSignal()
        Thread { _ = stop.wait(untilNanoseconds: MonotonicClock.nowNanoseconds() + 10_000_000_000); stop.raise() }.start()
        defer { stop.raise() }
        var frames: [Seen] = []
        let end = source.run(stop: stop) { sample in
            guard let video = sample.videoSample else { return }
            frames.append(Seen(number: video.bytes.first ?? 0, sequence: video.sequence, time: video.presentationTime.value,
                               isKeyframe: video.isKeyframe, bytes: Array(video.bytes)))
            if let count, frames.count >= count { stop.raise() }
        }
        return (end, frames)
    }

    func opened(_ camera: FakeV4L2Camera, path: String = "/dev/fake-video0") throws -> V4L2CaptureSource {
        let source = V4L2CaptureSource(device: camera.device(path: path))
        try source.open()
        return source
    }

    static func frames(_ numbers: Range<Int>) -> [Step] {
        FakeV4L2Camera.numberedFrames(numbers.count, from: numbers.lowerBound)
    }

    // MARK: Streaming

    /// Frames an output holds on to: once few buffers are left in the
    /// driver's queue, frames are copied and their buffers go straight
    /// back, so the driver never runs dry and every frame arrives.
    @Test func framesHeldByOutputsNeverStarveTheDriver() throws {
        let count = Int(V4L2CaptureSource.bufferCount) * 3
        let camera = try FakeV4L2Camera(script: Self.frames(0..<count))
        let source = try opened(camera)
        let stop = CaptureStopSignal()
        Thread { _ = stop.wait(untilNanoseconds: MonotonicClock.nowNanoseconds() + 10_000_000_000); stop.raise() }.start()
        var held: [VideoSampleBuffer] = []
        let end = source.run(stop: stop) { sample in
            guard let video = sample.videoSample else { return }
            held.append(video)
            if held.count == count { stop.raise() }
        }
        stop.raise()
        #expect(end == .stopped)
        #expect(held.count == count)
        // Every frame still holds its own picture.
        #expect(held.map { $0.bytes.first ?? 0 } == (0..<count).map { UInt8($0) })
        #expect(source.droppedByDevice == 0)
    }

    /// A buffer the driver refills while an output holds it (v4l2loopback
    /// does) is not delivered: it is counted as dropped by the device.
    @Test func aBufferRefilledWhileHeldIsDroppedNotDelivered() throws {
        var script = Self.frames(0..<3)
        script.append(.refillHeld(FakeV4L2Camera.Frame(bytes: [UInt8](repeating: 99, count: 64 * 48))))
        script += Self.frames(3..<6)
        let camera = try FakeV4L2Camera(script: script)
        let source = try opened(camera)
        let stop = CaptureStopSignal()
        Thread { _ = stop.wait(untilNanoseconds: MonotonicClock.nowNanoseconds() + 10_000_000_000); stop.raise() }.start()
        var held: [VideoSampleBuffer] = []
        var numbers: [UInt8] = []
        let end = source.run(stop: stop) { sample in
            guard let video = sample.videoSample else { return }
            held.append(video)
            numbers.append(video.bytes.first ?? 0)
            if numbers.count == 6 { stop.raise() }
        }
        stop.raise()
        #expect(end == .stopped)
        #expect(numbers == [0, 1, 2, 3, 4, 5])
        #expect(source.droppedByDevice == 1)
    }

    @Test func everyFilledBufferIsDeliveredOnceInOrderAndGoesBack() throws {
        let camera = try FakeV4L2Camera(script: Self.frames(0..<20))
        let source = try opened(camera)
        #expect(source.videoFormat == CaptureVideoFormat(layout: .raw(.gray8, bytesPerRow: nil), width: 64, height: 48,
                                                         frameDuration: MediaTime(value: 1, timescale: 30), fourcc: "GREY"))
        #expect(camera.requests.prefix(4) == ["VIDIOC_S_FMT", "VIDIOC_S_PARM", "VIDIOC_G_FMT", "VIDIOC_REQBUFS"])
        #expect(camera.mappedBuffers == Int(V4L2CaptureSource.bufferCount))

        let (end, frames) = capture(source, count: 20)
        #expect(end == .stopped)
        #expect(frames.map(\.number) == (0..<20).map { UInt8($0) })
        #expect(frames.map(\.sequence) == (0..<20).map { UInt64($0) })
        #expect(frames.allSatisfy { $0.bytes.count == 64 * 48 && $0.isKeyframe })
        #expect(source.droppedByDevice == 0)
        // Eight buffers carried twenty frames: each went back to the driver.
        #expect(camera.requests.filter { $0 == "VIDIOC_QBUF" }.count >= 20)
        #expect(camera.requests.last == "VIDIOC_STREAMOFF")
        #expect(!camera.isStreaming)

        source.close()
        #expect(camera.mappedBuffers == 0)
        #expect(camera.openHandles == 0)
    }

    /// A wakeup with nothing to dequeue (DQBUF answers EAGAIN) is not an error.
    @Test func nothingToDequeueAfterAWakeupIsNotAnError() throws {
        let camera = try FakeV4L2Camera(script: Self.frames(0..<3) + [.spuriousWakeup, .spuriousWakeup] + Self.frames(3..<6))
        let source = try opened(camera)
        let (end, frames) = capture(source, count: 6)
        #expect(end == .stopped)
        #expect(frames.map(\.number) == [0, 1, 2, 3, 4, 5])
        #expect(camera.emptyWakeups >= 1)
    }

    /// Frames the driver skipped show as gaps in its sequence numbers.
    @Test func sequenceGapsCountAsDroppedByTheDevice() throws {
        let camera = try FakeV4L2Camera(script: Self.frames(0..<5) + [.drop(3)] + Self.frames(5..<10) + [.drop(1)] + Self.frames(10..<12))
        let source = try opened(camera)
        let (end, frames) = capture(source, count: 12)
        #expect(end == .stopped)
        #expect(frames.map(\.sequence) == [0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 14, 15])
        #expect(source.droppedByDevice == 4)
        #expect(source.skippedFrames == 0)
    }

    /// A buffer flagged V4L2_BUF_FLAG_ERROR, or filled with nothing, is not
    /// delivered; it is counted, and it goes back to the driver.
    @Test func brokenAndEmptyBuffersAreSkippedAndCounted() throws {
        var script = Self.frames(0..<12)
        script[2] = .frame(.init(bytes: [UInt8](repeating: 2, count: 64 * 48), flags: V4L2BufferFlags.error))
        script[4] = .frame(.init(bytes: [UInt8](repeating: 4, count: 64 * 48), bytesUsed: 0))
        script[9] = .frame(.init(bytes: [UInt8](repeating: 9, count: 64 * 48), flags: V4L2BufferFlags.error))
        let camera = try FakeV4L2Camera(script: script)
        let source = try opened(camera)
        let (end, frames) = capture(source, count: 9)
        #expect(end == .stopped)
        #expect(frames.map(\.number) == [0, 1, 3, 5, 6, 7, 8, 10, 11])
        #expect(source.skippedFrames == 3)
        #expect(source.droppedByDevice == 3)
    }

    // MARK: A device that goes away

    /// DQBUF answering ENODEV ends the source as lost, after every frame
    /// filled before it was delivered.
    @Test func aDeviceGoneAtDequeueIsLost() throws {
        let camera = try FakeV4L2Camera(script: Self.frames(0..<10) + [.failDequeue(ENODEV)])
        let source = try opened(camera)
        let (end, frames) = capture(source)
        #expect(end == .deviceLost("/dev/fake-video0"))
        #expect(frames.map(\.number) == (0..<10).map { UInt8($0) })
    }

    /// QBUF answering ENODEV: the buffers still queued come back filled, and
    /// once none is left in the driver the source ends as lost.
    @Test func aDeviceGoneAtQueueIsLost() throws {
        let camera = try FakeV4L2Camera(script: Self.frames(0..<10) + [.failQueue(ENODEV)] + Self.frames(10..<40))
        let source = try opened(camera)
        let (end, frames) = capture(source)
        #expect(end == .deviceLost("/dev/fake-video0"))
        #expect(frames.count > 10 && frames.count < 40)
        #expect(frames.map(\.number) == (0..<frames.count).map { UInt8($0) })
        #expect(frames.count == camera.dequeuedBuffers)
    }

    /// A node that hangs up with nothing to dequeue: lost when its node is
    /// gone, a failure naming poll when it is still there.
    @Test(arguments: [true, false])
    func aNodeThatHangsUp(vanishes: Bool) throws {
        let camera = try FakeV4L2Camera(script: Self.frames(0..<3) + [.hangUp(vanish: vanishes)])
        let source = try opened(camera)
        let (end, frames) = capture(source)
        #expect(frames.count == 3)
        if vanishes {
            #expect(end == .deviceLost("/dev/fake-video0"))
        } else {
            #expect(end == .failed(.io("/dev/fake-video0", SystemCallError(call: "poll", errno: EIO))))
        }
    }

    // MARK: Timestamps

    /// A clock a driver may stamp with, and what V4L2TimestampClock makes of it.
    enum DriverClock: String, CaseIterable, Sendable {
        /// TIMESTAMP_MONOTONIC and monotonic stamps: used as they are.
        case monotonic
        /// TIMESTAMP_UNKNOWN and monotonic stamps: recognised as monotonic.
        case unknownMonotonic
        /// TIMESTAMP_UNKNOWN and realtime stamps (older drivers): shifted onto CLOCK_MONOTONIC.
        case unknownRealtime
        /// TIMESTAMP_MONOTONIC claimed with realtime stamps: the stamps' own clock wins.
        case mislabelledRealtime
        /// TIMESTAMP_COPY (an output buffer's time): stamped when dequeued.
        case copy
        /// TIMESTAMP_UNKNOWN with zero stamps: stamped when dequeued.
        case zero

        var flags: UInt32 {
            switch self {
            case .monotonic, .mislabelledRealtime: return V4L2TimestampClock.timestampMonotonic
            case .unknownMonotonic, .unknownRealtime, .zero: return V4L2TimestampClock.timestampUnknown
            case .copy: return V4L2TimestampClock.timestampCopy
            }
        }

        var stampsRealtime: Bool { self == .unknownRealtime || self == .mislabelledRealtime }
    }

    @Test(arguments: DriverClock.allCases)
    func driverStampsBecomeMonotonic(clock: DriverClock) throws {
        let interval: Int64 = 33_333_333
        let script: [Step] = (0..<10).map { number in
            .frame(.init(bytes: [UInt8](repeating: UInt8(number), count: 64 * 48),
                         timestamp: clock == .zero ? 0 : nil,
                         stampedAfterStreamOn: clock == .zero ? nil : Int64(number) * interval))
        }
        let camera = try FakeV4L2Camera(script: script)
        camera.timestampFlags = clock.flags
        camera.stampClock = clock.stampsRealtime ? CLOCK_REALTIME : CLOCK_MONOTONIC
        let source = try opened(camera)
        let before = MonotonicClock.nowNanoseconds()
        let (end, frames) = capture(source, count: 10)
        let after = MonotonicClock.nowNanoseconds()
        #expect(end == .stopped)
        try #require(frames.count == 10)
        let times = frames.map(\.time)
        let streamedOn = camera.streamedOnTime
        switch clock {
        case .monotonic, .unknownMonotonic:
            #expect(times == (0..<10).map { streamedOn + Int64($0) * interval })
        case .unknownRealtime, .mislabelledRealtime:
            // Shifted by the offset between the clocks, measured once: the
            // spacing is the driver's, the place within a few milliseconds.
            let offset = MonotonicClock.nowNanoseconds() - MonotonicClock.realtimeNanoseconds()
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == interval })
            #expect(abs(times[0] - (streamedOn + offset)) < 5_000_000, "\(times[0] - (streamedOn + offset)) ns off")
        case .copy, .zero:
            #expect(times.allSatisfy { $0 >= before && $0 <= after })
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 >= $0 })
        }
        #expect(source.replacedTimestamps == 0)
    }

    /// After the clock is decided, a stamp that jumps out of what is
    /// plausible (a driver that wraps) is replaced by the dequeue time, and counted.
    @Test func anImplausibleStampIsReplacedAndCounted() throws {
        var script: [Step] = (0..<6).map {
            .frame(.init(bytes: [UInt8(truncatingIfNeeded: $0)], stampedAfterStreamOn: Int64($0) * 40_000_000))
        }
        script[3] = .frame(.init(bytes: [3], timestamp: MonotonicClock.nowNanoseconds() - 60_000_000_000))
        let camera = try FakeV4L2Camera(script: script)
        let source = try opened(camera)
        let before = MonotonicClock.nowNanoseconds()
        let (_, frames) = capture(source, count: 6)
        try #require(frames.count == 6)
        let start = camera.streamedOnTime
        #expect(frames[2].time == start + 80_000_000)
        #expect(frames[3].time >= before)
        #expect(frames[4].time == start + 160_000_000)
        #expect(source.replacedTimestamps == 1)
    }

    /// v4l2loopback hands a new reader the buffer its writer left, stamped when it
    /// was written. A first buffer stamped seconds before STREAMON moves to the
    /// stream's start and is counted; one stamped within a frame of it is the
    /// frame being exposed as streaming began, and keeps its stamp.
    @Test(arguments: [-3_000_000_000, -9_000_000_000, -15_000_000] as [Int64])
    func aFirstBufferStampedBeforeStreamOn(stale: Int64) throws {
        let interval: Int64 = 33_333_333
        let script: [Step] = [.frame(.init(bytes: [0], stampedAfterStreamOn: stale))]
            + (1..<6).map { .frame(.init(bytes: [UInt8($0)], stampedAfterStreamOn: Int64($0) * interval)) }
        let camera = try FakeV4L2Camera(script: script)
        let source = try opened(camera)
        let (_, frames) = capture(source, count: 6)
        try #require(frames.count == 6)
        let start = camera.streamedOnTime
        #expect(frames.dropFirst().map(\.time) == (1..<6).map { start + Int64($0) * interval })
        if -stale > interval + 10_000_000 {
            // At the stream's start (taken just before the driver's STREAMON), not at its
            // stale stamp, and before the next frame.
            #expect(frames[0].time > start + stale + 1_000_000_000, "\(start - frames[0].time) ns before STREAMON")
            #expect(frames[0].time <= start)
            #expect(frames[0].time < frames[1].time)
            #expect(source.replacedTimestamps == 1)
        } else {
            #expect(frames[0].time == start + stale)
            #expect(source.replacedTimestamps == 0)
        }
    }

    // MARK: H.264

    /// Parameter sets in a buffer of their own are no frame: they are
    /// absorbed and put in front of the next IDR, which is a keyframe; the
    /// frames before it (joined mid-GOP) are not.
    @Test func parameterSetsAloneGoInFrontOfTheNextIDR() throws {
        let units = InBandH264Tests.accessUnits
        try #require(units.count == InBandH264Tests.frameCount)
        let key = units[15]
        let split = try #require(key.withUnsafeBytes { AccessUnit($0, codec: .h264) }.parameterSetRanges.last).upperBound
        let buffers = Array(units[5..<15]) + [Array(key[..<split]), Array(key[split...])] + Array(units[16..<20])
        let camera = try FakeV4L2Camera(fourcc: FourCC("H264")!, width: 160, height: 120, bufferSize: 256 * 1024,
                                        script: buffers.map { .frame(.init(bytes: $0)) } + [.failDequeue(ENODEV)])
        let source = try opened(camera)
        #expect(source.videoFormat?.layout == .compressed(codecName: "h264"))
        let (end, frames) = capture(source)
        #expect(end == .deviceLost("/dev/fake-video0"))
        // Fifteen pictures from sixteen buffers.
        #expect(frames.count == 15)
        #expect(frames.map(\.isKeyframe) == Array(repeating: false, count: 10) + [true] + Array(repeating: false, count: 4))
        #expect(frames[10].bytes == key)
        #expect(frames[11].bytes == units[16])
    }

    // MARK: Opening

    @Test func theRecordPriorityIsTakenOnTheStreamingHandle() throws {
        let camera = try FakeV4L2Camera()
        let source = V4L2CaptureSource(device: camera.device())
        source.holdsRecordPriority = true
        try source.open()
        #expect(camera.priority == .record)
        #expect(camera.requests.first == "VIDIOC_S_PRIORITY")
        source.close()
    }

    @Test func aCameraLockedByAnotherHandleIsBusy() throws {
        let camera = try FakeV4L2Camera()
        camera.priorityError = EBUSY
        let source = V4L2CaptureSource(device: camera.device())
        source.holdsRecordPriority = true
        #expect(throws: CaptureError.device(.busy("/dev/fake-video0", reason: "device is locked for configuration by another process"))) {
            try source.open()
        }
        #expect(camera.openHandles == 0)
        // A driver without priorities: the advisory lock is all there is.
        camera.priorityError = ENOTTY
        try source.open()
        source.close()
    }

    @Test func aFormatTheDriverChangedIsRefused() throws {
        let camera = try FakeV4L2Camera()
        camera.formatReply = V4L2CaptureFormat(pixelFormat: FourCC("GREY")!.code, width: 32, height: 24, bytesPerLine: 32)
        let source = V4L2CaptureSource(device: camera.device())
        do {
            try source.open()
            Issue.record("opened a camera set to another size")
        } catch {
            guard case .unsupported(let device, let reason) = error else { Issue.record("\(error)"); return }
            #expect(device == "/dev/fake-video0")
            #expect(reason.hasPrefix("the driver set 32x24 GREY when asked for 64x48"), "\(reason)")
        }
        #expect(camera.openHandles == 0)
        #expect(camera.mappedBuffers == 0)
    }

    /// Rows padded beyond their packed width are reported in the layout.
    @Test func paddedRowsAreReported() throws {
        let camera = try FakeV4L2Camera(bufferSize: 80 * 48)
        camera.formatReply = V4L2CaptureFormat(pixelFormat: FourCC("GREY")!.code, width: 64, height: 48, bytesPerLine: 80)
        let source = try opened(camera)
        #expect(source.videoFormat?.layout == .raw(.gray8, bytesPerRow: 80))
        source.close()
    }
}
