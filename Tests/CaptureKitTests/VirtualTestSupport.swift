import Foundation
import Testing
@testable import CaptureKit

/// Runs a source's capture loop on this thread, handing each sample to
/// `body`, until it has delivered `count` samples or ended by itself.
@discardableResult
func captureSamples(_ source: any CaptureSource, count: Int? = nil, _ body: (SampleBuffer) -> Void = { _ in }) -> CaptureEnd {
    let stop = CaptureStopSignal()
    var delivered = 0
    return source.run(stop: stop) { sample in
        body(sample)
        delivered += 1
        if let count, delivered >= count { stop.raise() }
    }
}

extension SampleBuffer {
    var videoSample: VideoSampleBuffer? {
        if case .video(let video) = self { return video }
        return nil
    }

    var audioSample: AudioSampleBuffer? {
        if case .audio(let audio) = self { return audio }
        return nil
    }
}

/// YUV4MPEG2 files written by hand: a header, then each frame after `FRAME`.
enum Y4MFile {
    /// `count` test pattern frames (yuv420p), numbered from 0, each after the
    /// line `header(number)` (`FRAME` by default), then `trailer`.
    static func write(_ path: String, width: Int, height: Int, rate: String, count: Int,
                      header: (Int) -> String = { _ in "FRAME" }, trailer: Data = Data()) throws {
        let renderer = try #require(TestPatternRenderer(width: width, height: height, format: .yuv420p))
        var data = Data("YUV4MPEG2 W\(width) H\(height) F\(rate) Ip A1:1 C420jpeg\n".utf8)
        let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: renderer.frameSize, alignment: 16)
        defer { frame.deallocate() }
        for number in 0..<count {
            renderer.render(frame: Int64(number), into: frame)
            data.append(Data((header(number) + "\n").utf8))
            data.append(Data(frame))
        }
        data.append(trailer)
        try data.write(to: URL(fileURLWithPath: path))
    }
}

/// Reads NumberedFrames' number from the luma of a packed yuv420p or gray8 sample.
func numberedFrame(luma sample: VideoSampleBuffer) -> Int {
    let stride: Int
    if case .raw(_, let bytesPerRow) = sample.layout, let bytesPerRow { stride = bytesPerRow } else { stride = sample.width }
    var number = 0
    let y = sample.height / 4
    for bit in 0..<NumberedFrames.bits {
        let x = (2 * bit + 1) * sample.width / (2 * NumberedFrames.bits)
        if sample.bytes[y * stride + x] > 128 { number |= 1 << bit }
    }
    return number
}

extension VideoSampleBuffer {
    /// A copy that owns its bytes: a test keeps it without holding the
    /// source's lent memory (a file played as fast as possible waits until
    /// its samples come back).
    func detached() -> VideoSampleBuffer {
        VideoSampleBuffer(storage: SampleStorage(copying: bytes), layout: layout, width: width, height: height,
                          presentationTime: presentationTime, duration: duration, sequence: sequence, isKeyframe: isKeyframe)
    }
}
