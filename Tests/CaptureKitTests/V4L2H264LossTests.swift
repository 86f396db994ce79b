import Foundation
import Testing
@testable import CaptureKit

/// An H.264 camera that loses a frame: the frames after it, up to the next
/// keyframe, refer to a picture nobody has, so they are dropped with it
/// (counted by the device) instead of being delivered undecodable.
@Suite struct V4L2H264LossTests {
    @Test func framesAfterALossWaitForTheNextKeyframe() throws {
        let units = InBandH264Tests.accessUnits
        try #require(units.count == InBandH264Tests.frameCount)
        // Frames 0–4, frame 5 lost, 6–14 depend on it, 15 is an IDR; then a
        // broken buffer at 20 and 21–29 depending on it, 30 an IDR.
        var script: [FakeV4L2Camera.Step] = units[0..<5].map { .frame(.init(bytes: $0)) } + [.drop(1)]
        script += units[6..<20].map { .frame(.init(bytes: $0)) }
        script += [.frame(.init(bytes: units[20], flags: V4L2BufferFlags.error))]
        script += units[21..<35].map { .frame(.init(bytes: $0)) }
        script += [.failDequeue(ENODEV)]
        let camera = try FakeV4L2Camera(fourcc: FourCC("H264")!, width: 160, height: 120, bufferSize: 256 * 1024, script: script)
        let source = V4L2CaptureSource(device: camera.device(path: "/dev/fake-video0"))
        try source.open()
        let (end, frames) = V4L2CaptureSourceTests().capture(source)

        #expect(end == .deviceLost("/dev/fake-video0"))
        let delivered = frames.map(\.bytes)
        let expected = Array(units[0..<5]) + Array(units[15..<20]) + Array(units[30..<35])
        #expect(delivered == expected)
        #expect(frames.map(\.isKeyframe) == [true, false, false, false, false, true, false, false, false, false, true, false, false, false, false])
        // One lost and 9 after it; one broken and 9 after it.
        #expect(source.droppedByDevice == 1 + 9 + 1 + 9)
    }
}
