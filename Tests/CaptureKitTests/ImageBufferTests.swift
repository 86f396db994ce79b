@testable import CaptureKit
import Foundation
import Testing

/// The image-buffer view of captured frames and of pixel buffers: planes,
/// strides and sizes of yuv420p, NV12 and YUYV test pattern frames, read
/// back to the frame counter and the black behind it.
@Suite struct ImageBufferTests {
    /// The first `count` test pattern frames in `format`, copied.
    static func samples(_ format: String, count: Int = 3, width: Int = 320, height: Int = 240) throws -> [VideoSampleBuffer] {
        let source = TestPatternSource(request: CaptureVideoRequest(width: width, height: height, pixelFormat: format), realtime: false)
        try source.open()
        defer { source.close() }
        var samples: [VideoSampleBuffer] = []
        captureSamples(source, count: count) { samples.append($0.videoSample!.detached()) }
        return samples
    }

    /// The frame counter read through the image-buffer API only (plane 0,
    /// `bytesPerPixel` apart): the same code for a captured frame and a pixel buffer.
    static func counter(in image: some ImageBuffer, bytesPerPixel: Int) -> Int? {
        image.withLockedBaseAddress { image -> Int? in
            guard let base = image.baseAddress(ofPlane: 0) else { return nil }
            let stride = image.bytesPerRow(ofPlane: 0)
            let bytes = base.assumingMemoryBound(to: UInt8.self)
            return CounterLayout(width: image.width, height: image.height).read(width: image.width, height: image.height) { x, y in
                bytes[y * stride + x * bytesPerPixel]
            }
        }
    }

    /// The chroma byte (U) at pixel (x, y) of a YUV image, through the image-buffer API.
    static func blueDifference(in image: some ImageBuffer, x: Int, y: Int) -> UInt8? {
        image.withLockedBaseAddress { image -> UInt8? in
            switch image.pixelFormat {
            case .yuv420p:
                guard let plane = image.baseAddress(ofPlane: 1) else { return nil }
                return plane.load(fromByteOffset: (y / 2) * image.bytesPerRow(ofPlane: 1) + x / 2, as: UInt8.self)
            case .nv12:
                guard let plane = image.baseAddress(ofPlane: 1) else { return nil }
                return plane.load(fromByteOffset: (y / 2) * image.bytesPerRow(ofPlane: 1) + (x / 2) * 2, as: UInt8.self)
            case .yuyv422:
                guard let plane = image.baseAddress(ofPlane: 0) else { return nil }
                return plane.load(fromByteOffset: y * image.bytesPerRow(ofPlane: 0) + (x & ~1) * 2 + 1, as: UInt8.self)
            default: return nil
            }
        }
    }

    struct Expected: Sendable {
        let format: String
        let pixelFormat: PixelFormat
        let bytesPerRow: [Int]
        let widths: [Int]
        let heights: [Int]
        let bytesPerPixel: Int
    }

    static let cases: [Expected] = [
        Expected(format: "yuv420p", pixelFormat: .yuv420p, bytesPerRow: [320, 160, 160], widths: [320, 160, 160], heights: [240, 120, 120], bytesPerPixel: 1),
        Expected(format: "NV12", pixelFormat: .nv12, bytesPerRow: [320, 320], widths: [320, 160], heights: [240, 120], bytesPerPixel: 1),
        Expected(format: "YUYV", pixelFormat: .yuyv422, bytesPerRow: [640], widths: [320], heights: [240], bytesPerPixel: 2),
    ]

    @Test(arguments: cases)
    func planesOfACapturedFrameAreWhereTheFrameHasThem(_ expected: Expected) throws {
        for sample in try Self.samples(expected.format) {
            let image = try #require(sample.imageBuffer)
            #expect(sample.imageBuffer === image, "the view is made once per sample")
            #expect(image.pixelFormat == expected.pixelFormat)
            #expect(image.width == 320 && image.height == 240)
            #expect(image.planeCount == expected.bytesPerRow.count)
            #expect((0..<image.planeCount).map { image.bytesPerRow(ofPlane: $0) } == expected.bytesPerRow)
            #expect((0..<image.planeCount).map { image.width(ofPlane: $0) } == expected.widths)
            #expect((0..<image.planeCount).map { image.height(ofPlane: $0) } == expected.heights)

            // Scoped access: memory only while locked, and read-only.
            #expect(image.baseAddress(ofPlane: 0) == nil)
            #expect(!image.lockBaseAddress([]))
            #expect(image.baseAddress(ofPlane: 0) == nil)
            image.withLockedBaseAddress { image in
                // Planes lie one after another in the frame's bytes, as the device packs them.
                var offset = 0
                for plane in 0..<image.planeCount {
                    let base = UnsafeRawPointer(image.baseAddress(ofPlane: plane))
                    #expect(base == sample.bytes.baseAddress! + offset, "plane \(plane)")
                    offset += image.bytesPerRow(ofPlane: plane) * image.height(ofPlane: plane)
                }
                #expect(offset == sample.bytes.count)
                #expect(image.baseAddress(ofPlane: image.planeCount) == nil)
            }
            #expect(image.baseAddress == nil)

            // The counter drawn in it is the frame's number, and the black behind it has no colour.
            #expect(Self.counter(in: image, bytesPerPixel: expected.bytesPerPixel) == Int(sample.sequence))
            let layout = CounterLayout(width: 320, height: 240)
            let chroma = try #require(Self.blueDifference(in: image, x: layout.x + 2, y: layout.y + 2))
            #expect(abs(Int(chroma) - 128) <= 2)

            // A pixel buffer shows the same view: the same code reads it.
            let copy = try PixelBuffer(copying: image)
            #expect(copy.pixelFormat == expected.pixelFormat && copy.planeCount == image.planeCount)
            #expect((0..<copy.planeCount).map { copy.width(ofPlane: $0) } == expected.widths)
            #expect((0..<copy.planeCount).map { copy.height(ofPlane: $0) } == expected.heights)
            #expect(copy.baseAddress(ofPlane: 0) == nil)
            #expect(Self.counter(in: copy, bytesPerPixel: expected.bytesPerPixel) == Int(sample.sequence))
            #expect(Self.blueDifference(in: copy, x: layout.x + 2, y: layout.y + 2) == chroma)
        }
    }

    @Test func compressedFramesHaveNoImageBuffer() {
        let bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xD9]
        let sample = VideoSampleBuffer(storage: bytes.withUnsafeBytes { SampleStorage(copying: $0) }, layout: .compressed(codecName: "mjpeg"),
                                       width: 320, height: 240, presentationTime: .zero, duration: nil, sequence: 0)
        #expect(sample.imageBuffer == nil)
        let short = VideoSampleBuffer(storage: bytes.withUnsafeBytes { SampleStorage(copying: $0) }, layout: .raw(.yuv420p, bytesPerRow: nil),
                                      width: 320, height: 240, presentationTime: .zero, duration: nil, sequence: 0)
        #expect(short.imageBuffer == nil)
    }

    @Test func paddedRowsKeepTheirStride() throws {
        let stride = 700
        let storage = SampleStorage(count: stride * 240) { $0.initializeMemory(as: UInt8.self, repeating: 7) }
        let sample = VideoSampleBuffer(storage: storage, layout: .raw(.yuyv422, bytesPerRow: stride), width: 320, height: 240,
                                       presentationTime: .zero, duration: nil, sequence: 0)
        let image = try #require(sample.imageBuffer)
        #expect(image.bytesPerRow == stride && image.planeCount == 1 && !image.isPlanar)
    }

    @Test func aPixelBufferLockedForWritingIsWritten() throws {
        let buffer = try PixelBuffer(width: 64, height: 48, pixelFormat: .bgra)
        #expect(buffer.baseAddress == nil)
        buffer.withLockedBaseAddress([]) { buffer in
            let base = buffer.baseAddress!
            for row in 0..<buffer.height { (base + row * buffer.bytesPerRow).initializeMemory(as: UInt8.self, repeating: UInt8(row), count: 64 * 4) }
        }
        buffer.withUnsafeBytes(plane: 0) { bytes in
            #expect(bytes[buffer.bytesPerRow(plane: 0) * 47 + 5] == 47)
        }
        #expect(buffer.planeCount == 1 && buffer.width(ofPlane: 0) == 64 && buffer.height(ofPlane: 0) == 48)
    }
}
