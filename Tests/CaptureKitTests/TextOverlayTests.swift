@testable import CaptureKit
import Foundation
import Testing

/// Burned-in text: where the box lands, how big it is, each pixel format the
/// cameras give, and the text a frame's capture time makes.
struct TextOverlayTests {
    /// A mid-grey frame (every byte 100) in `format`, in memory of its own.
    static func frame(_ format: PixelFormat, width: Int = 640, height: Int = 480, time: MediaTime = MonotonicClock.now()) -> VideoSampleBuffer {
        let size = format.imageSize(width: width, height: height)!
        return VideoSampleBuffer(storage: SampleStorage(count: size) { $0.initializeMemory(as: UInt8.self, repeating: 100) },
                                 layout: .raw(format, bytesPerRow: nil), width: width, height: height,
                                 presentationTime: time, duration: nil, sequence: 7)
    }

    /// For every pixel of plane `plane`: whether its bytes differ between `a` and `b`, as (x, y) in full-frame luma coordinates.
    static func changedPixels(_ a: VideoSampleBuffer, _ b: VideoSampleBuffer, plane: Int = 0, bytesPerPixel: Int) -> [(x: Int, y: Int)] {
        guard case .raw(let format, _) = a.layout, let planes = ImagePlaneLayout.planes(format: format, width: a.width, height: a.height, bytesPerRow: nil) else { return [] }
        let layout = planes[plane]
        var changed: [(Int, Int)] = []
        for y in 0..<layout.height {
            for x in 0..<layout.width {
                let start = layout.offset + y * layout.bytesPerRow + x * bytesPerPixel
                if (0..<bytesPerPixel).contains(where: { a.bytes[start + $0] != b.bytes[start + $0] }) { changed.append((x, y)) }
            }
        }
        return changed
    }

    @Test(arguments: [(PixelFormat.yuv420p, 1), (.nv12, 1), (.yuyv422, 2), (.rgb24, 3)])
    func textLandsInTheBoxOnly(format: PixelFormat, bytesPerPixel: Int) throws {
        for position in TextOverlay.Position.allCases {
            let original = Self.frame(format)
            let before = Array(original.bytes)
            let renderer = TextOverlayRenderer(overlay: TextOverlay(text: "12:34:56 Door", position: position), cameraName: "cam")
            let drawn = renderer.process(original)
            #expect(Array(original.bytes) == before, "the frame given (a lent capture buffer) is left alone")
            #expect(drawn !== original)
            let box = try #require(TextOverlayBox.placing(length: 13, in: 640, 480, at: position))
            // Plane 0 holds the luma (or all of RGB and YUYV): every changed pixel is inside the box, and the box is drawn.
            let changed = Self.changedPixels(original, drawn, bytesPerPixel: bytesPerPixel)
            let xs = changed.map { bytesPerPixel == 2 ? $0.x / 2 * 2 : $0.x }
            #expect(xs.allSatisfy { (box.x..<box.x + box.width).contains($0) }, "\(format) \(position)")
            #expect(changed.allSatisfy { (box.y..<box.y + box.height).contains($0.y) }, "\(format) \(position)")
            let expectedPixels = bytesPerPixel == 2 ? box.width * box.height / 2 : box.width * box.height
            #expect(changed.count >= expectedPixels * 9 / 10, "\(format) \(position): the box is dark and the text light, both unlike mid grey")
            // Opposite corners: the box sits where it was asked.
            let left = position == .topLeft || position == .bottomLeft, top = position == .topLeft || position == .topRight
            #expect(left ? box.x < 320 - box.width / 2 : box.x + box.width > 320 + box.width / 2)
            #expect(top ? box.y < 240 : box.y > 240)
            // Text pixels are light, box pixels dark, on the first component of plane 0.
            let values = Set(changed.map { drawn.bytes[$0.y * (640 * bytesPerPixel) + $0.x * bytesPerPixel] })
            #expect(values.count >= 2 && values.min()! <= 16 && values.max()! >= 235, "\(format): \(values.sorted())")
        }
    }

    @Test func chromaInTheBoxIsNeutral() throws {
        let original = Self.frame(.yuv420p)
        let drawn = TextOverlayRenderer(overlay: TextOverlay(text: "X"), cameraName: "cam").process(original)
        let box = try #require(TextOverlayBox.placing(length: 1, in: 640, 480, at: .topLeft))
        let uPlane = 640 * 480
        #expect(drawn.bytes[uPlane + (box.y / 2) * 320 + box.x / 2] == 128)
        #expect(drawn.bytes[uPlane + 200 * 320 + 200] == 100)
    }

    @Test func sizeFollowsTheFrameHeight() throws {
        #expect(TextOverlayBox.scale(forFrameHeight: 1080) == 8)
        #expect(TextOverlayBox.scale(forFrameHeight: 720) == 5)
        #expect(TextOverlayBox.scale(forFrameHeight: 480) == 3)
        #expect(TextOverlayBox.scale(forFrameHeight: 120) == 2, "glyphs at least 14 pixels high")
        for height in [240, 480, 720, 1080, 2160] {
            let glyph = OverlayFont.rows * TextOverlayBox.scale(forFrameHeight: height)
            #expect(abs(glyph - height / 20) <= height / 40 + 7, "\(height): glyphs \(glyph) px")
        }
        let small = try #require(TextOverlayBox.placing(length: 8, in: 1280, 720, at: .topLeft))
        let large = try #require(TextOverlayBox.placing(length: 8, in: 1920, 1080, at: .topLeft))
        #expect(large.height > small.height && large.width > small.width)
        // Text wider than the frame is cut to what fits.
        let cut = try #require(TextOverlayBox.placing(length: 200, in: 320, 240, at: .topRight))
        #expect(cut.characters < 200 && cut.x >= 0 && cut.x + cut.width <= 320)
    }

    /// An MJPEG camera's frame is decoded to 4:2:0 and drawn into; a damaged one is left out and counted.
    @Test func compressedFramesAreDecodedAndDrawnInto() throws {
        let width = 640, height = 480
        let picture = try PixelBuffer(width: width, height: height, pixelFormat: .yuvj420p)
        for plane in 0..<3 {
            picture.withUnsafeMutableBytes(plane: plane) { $0.initializeMemory(as: UInt8.self, repeating: plane == 0 ? 100 : 128) }
        }
        let jpeg = try JPEGEncoder(width: width, height: height, quality: 95).encode(picture)
        let format = CaptureVideoFormat(layout: .compressed(codecName: "mjpeg"), width: width, height: height,
                                        frameDuration: MediaTime(value: 1, timescale: 30), fourcc: "MJPG")
        let renderer = TextOverlayRenderer(overlay: TextOverlay(text: "12:34:56 Door"), cameraName: "cam")
        #expect(renderer.outputFormat(for: format) == CaptureVideoFormat(layout: .raw(.yuv420p, bytesPerRow: nil), width: width, height: height,
                                                                         frameDuration: format.frameDuration, fourcc: "YU12"))
        let time = MonotonicClock.now()
        let sample = VideoSampleBuffer(storage: jpeg.withUnsafeBytes { SampleStorage(copying: $0) }, layout: .compressed(codecName: "mjpeg"),
                                       width: width, height: height, presentationTime: time, duration: format.frameDuration, sequence: 3)
        let drawn = try #require(renderer.process(sample, of: format))
        #expect(drawn.layout == .raw(.yuv420p, bytesPerRow: nil) && drawn.presentationTime == time && drawn.sequence == 3)
        #expect(drawn.bytes.count == PixelFormat.yuv420p.imageSize(width: width, height: height))
        // Luma: the full-range grey 100 is limited-range 102 outside the box; inside, only the box's dark and the text's light.
        let box = try #require(TextOverlayBox.placing(length: 13, in: width, height, at: .topLeft))
        var inside: Set<UInt8> = [], outside: Set<UInt8> = []
        for y in 0..<height {
            for x in 0..<width {
                let value = drawn.bytes[y * width + x]
                if x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height { inside.insert(value) } else { outside.insert(value) }
            }
        }
        #expect(inside == [16, 235], "\(inside.sorted())")
        #expect(outside.allSatisfy { abs(Int($0) - 102) <= 2 }, "\(outside.sorted())")
        // Garbage where a JPEG should be: left out, and counted as lost at its time.
        let damaged = VideoSampleBuffer(storage: SampleStorage(count: 4096) { $0.initializeMemory(as: UInt8.self, repeating: 0x5A) },
                                        layout: .compressed(codecName: "mjpeg"), width: width, height: height,
                                        presentationTime: time + MediaTime(value: 1, timescale: 30), duration: nil, sequence: 4)
        #expect(renderer.process(damaged, of: format) == nil)
        #expect(renderer.losses?.total == 1)
        // A VP9 camera is not one it decodes; 10-bit raw frames not ones it draws on.
        #expect(renderer.outputFormat(for: CaptureVideoFormat(layout: .compressed(codecName: "vp9"), width: width, height: height,
                                                              frameDuration: nil, fourcc: "VP90")) == nil)
        #expect(renderer.outputFormat(for: CaptureVideoFormat(layout: .raw(PixelFormat(name: "yuv420p10le")!, bytesPerRow: nil), width: width,
                                                              height: height, frameDuration: nil, fourcc: "x")) == nil)
    }

    @Test func strftimeFieldsMillisecondsAndCameraName() {
        // 2023-11-14 22:13:20.123456789 UTC; seconds do not depend on the time zone.
        let wall: Int64 = 1_700_000_000_123_456_789
        let overlay = TextOverlay(text: "%S.%f {camera} 100%% %Y-%m-%d")
        var seconds = 1_700_000_000
        var parts = tm()
        localtime_r(&seconds, &parts)
        let date = String(format: "%04d-%02d-%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
        #expect(overlay.text(atWallTime: wall, camera: "Cam %d") == "20.123 Cam %d 100% \(date)")
        #expect(TextOverlay(text: "%f").text(atWallTime: 1_700_000_000_005_000_000, camera: "") == "005")
        #expect(TextOverlay(text: "%%f").text(atWallTime: wall, camera: "") == "%f")
    }

    @Test func captureTimeIsReadAsWallTime() {
        // A frame captured now reads as the wall clock now (within the time the call takes).
        let overlay = TextOverlay(text: "%s")
        let before = Int(Date().timeIntervalSince1970)
        let text = overlay.text(at: MonotonicClock.now(), camera: "")
        let after = Int(Date().timeIntervalSince1970)
        #expect((before...after).contains(Int(text) ?? -1), "\(text)")
        // Two seconds earlier on the capture clock is two seconds earlier on the wall.
        let earlier = MediaTime(value: MonotonicClock.nowNanoseconds() - 2_000_000_000, timescale: MonotonicClock.timescale)
        #expect((before - 2...after - 2).contains(Int(overlay.text(at: earlier, camera: "")) ?? -1))
    }
}
