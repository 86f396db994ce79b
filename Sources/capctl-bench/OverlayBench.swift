import CaptureKit
import Foundation

/// `capctl-bench overlay N FORMAT WxH`: the CPU time per frame of burning a
/// 27-character time stamp into N frames of FORMAT (a libavutil name) at WxH
/// with `TextOverlayRenderer` (copy into a pooled buffer, then draw), and of
/// the copy alone (a memcpy of the frame), in microseconds.
func runOverlay(count: Int, format name: String, size: String) -> (overlay: Double, copy: Double) {
    let sides = size.split(separator: "x").compactMap { Int($0) }
    guard let format = PixelFormat(name: name), sides.count == 2, let bytes = format.imageSize(width: sides[0], height: sides[1]) else {
        fail("usage: capctl-bench overlay N FORMAT WxH (such as yuv420p 1920x1080)")
    }
    let storage = SampleStorage(count: bytes) { $0.initializeMemory(as: UInt8.self, repeating: 90) }
    let renderer = TextOverlayRenderer(overlay: TextOverlay(text: "Door %Y-%m-%d %H:%M:%S.%f"), cameraName: "bench")
    var checksum = 0
    let start = cpuSeconds()
    for index in 0..<count {
        let frame = VideoSampleBuffer(storage: storage, layout: .raw(format, bytesPerRow: nil), width: sides[0], height: sides[1],
                                      presentationTime: MediaTime(value: Int64(index) * 33_333_333, timescale: 1_000_000_000),
                                      duration: nil, sequence: UInt64(index))
        checksum &+= Int(renderer.process(frame).bytes[bytes / 2])
    }
    let overlay = (cpuSeconds() - start) / Double(count) * 1e6
    let target = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes, alignment: 64)
    defer { target.deallocate() }
    let copyStart = cpuSeconds()
    for _ in 0..<count {
        target.copyMemory(from: storage.bytes)
        checksum &+= Int(target[bytes / 2])
    }
    let copy = (cpuSeconds() - copyStart) / Double(count) * 1e6
    if checksum == -1 { print("") }
    return (overlay, copy)
}

/// `capctl-bench overlay-mjpeg N WxH FILE`: the CPU time per frame of an
/// MJPEG camera's frame (the JPEG in FILE, WxH) decoded to 4:2:0 with the
/// time stamp drawn in (`TextOverlayRenderer.process(_:of:)`), in microseconds.
func runOverlayMJPEG(count: Int, size: String, path: String) -> Double {
    let sides = size.split(separator: "x").compactMap { Int($0) }
    guard sides.count == 2, let jpeg = FileManager.default.contents(atPath: path), !jpeg.isEmpty else {
        fail("usage: capctl-bench overlay-mjpeg N WxH FILE (a JPEG of that size)")
    }
    let storage = jpeg.withUnsafeBytes { SampleStorage(copying: $0) }
    let format = CaptureVideoFormat(layout: .compressed(codecName: "mjpeg"), width: sides[0], height: sides[1],
                                    frameDuration: MediaTime(value: 1, timescale: 30), fourcc: "MJPG")
    let renderer = TextOverlayRenderer(overlay: TextOverlay(text: "Door %Y-%m-%d %H:%M:%S.%f"), cameraName: "bench")
    var decoded = 0
    let start = cpuSeconds()
    for index in 0..<count {
        let frame = VideoSampleBuffer(storage: storage, layout: .compressed(codecName: "mjpeg"), width: sides[0], height: sides[1],
                                      presentationTime: MediaTime(value: Int64(index) * 33_333_333, timescale: 1_000_000_000),
                                      duration: nil, sequence: UInt64(index))
        if renderer.process(frame, of: format) != nil { decoded += 1 }
    }
    let perFrame = (cpuSeconds() - start) / Double(count) * 1e6
    guard decoded == count else { fail("only \(decoded) of \(count) frames were decoded") }
    return perFrame
}
