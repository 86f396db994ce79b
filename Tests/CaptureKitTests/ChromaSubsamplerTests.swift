import CFFmpeg
import Foundation
import Testing
@testable import CaptureKit

/// 4:2:2 to 4:2:0 without libswscale: against a reference computed here,
/// and through the writer into files read back.
@Suite struct ChromaSubsamplerTests {
    /// Bytes that change from pixel to pixel and row to row.
    static func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 * 37 + seed * 101) ^ ($0 >> 3)) }
    }

    static func mean(_ a: UInt8, _ b: UInt8) -> UInt8 { UInt8((Int(a) + Int(b) + 1) / 2) }

    /// Converts with planes of `width`+`pad` bytes a row, returning the three destination planes.
    static func run(_ subsampler: ChromaSubsampler, planes sourcePlanes: [[UInt8]], strides sourceStrides: [Int],
                    width: Int, height: Int) -> (y: [[UInt8]], u: [[UInt8]], v: [[UInt8]]) {
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        let yStride = width + 5, cStride = chromaWidth + 3
        var y = [UInt8](repeating: 0, count: yStride * height)
        var u = [UInt8](repeating: 0, count: cStride * chromaHeight)
        var v = [UInt8](repeating: 0, count: cStride * chromaHeight)
        let sources = sourcePlanes.map { plane -> UnsafeMutablePointer<UInt8> in
            let copy = UnsafeMutablePointer<UInt8>.allocate(capacity: plane.count)
            copy.initialize(from: plane, count: plane.count)
            return copy
        }
        defer { sources.forEach { $0.deallocate() } }
        var planes: [UnsafePointer<UInt8>?] = sources.map { UnsafePointer($0) } + [nil, nil, nil, nil]
        var strides: [Int32] = sourceStrides.map { Int32($0) } + [0, 0, 0, 0]
        y.withUnsafeMutableBufferPointer { yOut in
            u.withUnsafeMutableBufferPointer { uOut in
                v.withUnsafeMutableBufferPointer { vOut in
                    var destination: [UnsafeMutablePointer<UInt8>?] = [yOut.baseAddress, uOut.baseAddress, vOut.baseAddress, nil]
                    var destinationStrides: [Int32] = [Int32(yStride), Int32(cStride), Int32(cStride), 0]
                    #expect(subsampler.convert(planes: &planes, strides: &strides, height: height,
                                               into: &destination, destinationStrides: &destinationStrides))
                }
            }
        }
        func rows(_ bytes: [UInt8], stride: Int, width: Int, count: Int) -> [[UInt8]] {
            (0..<count).map { Array(bytes[($0 * stride)..<($0 * stride + width)]) }
        }
        return (rows(y, stride: yStride, width: width, count: height), rows(u, stride: cStride, width: chromaWidth, count: chromaHeight),
                rows(v, stride: cStride, width: chromaWidth, count: chromaHeight))
    }

    @Test(arguments: [(8, 6), (7, 5), (1, 1), (33, 3)])
    func planar422BecomesTheMeanOfEachPairOfChromaRows(width: Int, height: Int) throws {
        let subsampler = try #require(ChromaSubsampler(from: AV_PIX_FMT_YUV422P, to: AV_PIX_FMT_YUV420P, width: width))
        #expect(subsampler.hasLumaPlane)
        let chromaWidth = (width + 1) / 2
        let lumaStride = width + 3, chromaStride = chromaWidth + 1
        let y = Self.pattern(lumaStride * height, seed: 1), u = Self.pattern(chromaStride * height, seed: 2)
        let v = Self.pattern(chromaStride * height, seed: 3)
        let out = Self.run(subsampler, planes: [y, u, v], strides: [lumaStride, chromaStride, chromaStride], width: width, height: height)
        for row in 0..<height {
            #expect(out.y[row] == Array(y[(row * lumaStride)..<(row * lumaStride + width)]))
        }
        for row in 0..<(height + 1) / 2 {
            let upper = 2 * row, lower = min(2 * row + 1, height - 1)
            let expectedU = (0..<chromaWidth).map { Self.mean(u[upper * chromaStride + $0], u[lower * chromaStride + $0]) }
            let expectedV = (0..<chromaWidth).map { Self.mean(v[upper * chromaStride + $0], v[lower * chromaStride + $0]) }
            #expect(out.u[row] == expectedU)
            #expect(out.v[row] == expectedV)
        }
    }

    @Test(arguments: [(AV_PIX_FMT_YUYV422, [0, 2, 1, 3]), (AV_PIX_FMT_UYVY422, [1, 3, 0, 2])])
    func packed422IsSplitIntoPlanes(format: AVPixelFormat, offsets: [Int]) throws {
        let width = 10, height = 5, pitch = 2 * width + 4
        let subsampler = try #require(ChromaSubsampler(from: format, to: AV_PIX_FMT_YUV420P, width: width))
        #expect(!subsampler.hasLumaPlane)
        let packed = Self.pattern(pitch * height, seed: 4)
        let out = Self.run(subsampler, planes: [packed], strides: [pitch], width: width, height: height)
        for row in 0..<height {
            let expected = (0..<width).map { packed[row * pitch + 4 * ($0 / 2) + ($0 % 2 == 0 ? offsets[0] : offsets[1])] }
            #expect(out.y[row] == expected)
        }
        for row in 0..<3 {
            let upper = 2 * row * pitch, lower = min(2 * row + 1, height - 1) * pitch
            #expect(out.u[row] == (0..<width / 2).map { Self.mean(packed[upper + 4 * $0 + offsets[2]], packed[lower + 4 * $0 + offsets[2]]) })
            #expect(out.v[row] == (0..<width / 2).map { Self.mean(packed[upper + 4 * $0 + offsets[3]], packed[lower + 4 * $0 + offsets[3]]) })
        }
    }

    @Test func otherPairsAndOddPackedWidthsAreLeftToLibswscale() {
        #expect(ChromaSubsampler(from: AV_PIX_FMT_YUYV422, to: AV_PIX_FMT_YUV420P, width: 7) == nil)
        #expect(ChromaSubsampler(from: AV_PIX_FMT_YUV420P, to: AV_PIX_FMT_YUV420P, width: 8) == nil)
        // A change of range is a change of values, not only of layout.
        #expect(ChromaSubsampler(from: AV_PIX_FMT_YUV422P, to: AV_PIX_FMT_YUVJ420P, width: 8) == nil)
        #expect(ChromaSubsampler(from: AV_PIX_FMT_YUYV422, to: AV_PIX_FMT_NV12, width: 8) == nil)
        #expect(ChromaSubsampler(from: AV_PIX_FMT_YUV422P, to: AV_PIX_FMT_YUV420P, width: 0) == nil)
    }

    /// A 4:2:2 frame with blue-ish chroma above and red-ish below, numbered in its luma.
    static func coloured(_ number: Int, format: PixelFormat) throws -> PixelBuffer {
        let frame = try NumberedFrames.convert(NumberedFrames.make(number), to: format)
        for plane in 1...2 {
            let stride = frame.bytesPerRow(plane: plane)
            frame.withUnsafeMutableBytes(plane: plane) { bytes in
                for row in 0..<frame.height {
                    let top = row < frame.height / 2
                    for x in 0..<frame.width / 2 { bytes[row * stride + x] = (plane == 1) == top ? 176 : 80 }
                }
            }
        }
        return frame
    }

    @Test(arguments: [(VideoCodec.h264, PixelFormat.yuv422p), (.mjpeg, PixelFormat(raw: AV_PIX_FMT_YUVJ422P))])
    func aWrittenFileKeepsLumaAndChroma(codec: VideoCodec, format: PixelFormat) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("chroma.mkv")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: codec, width: 320, height: 240, quality: codec == .mjpeg ? 3 : 18, preset: codec == .h264 ? "ultrafast" : nil,
            expectedFrameDuration: WriterTests.frameDuration)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        for number in 0..<12 {
            try input.append(Self.coloured(number, format: format), presentationTime: WriterTests.frameDuration * Int64(number))
        }
        // x264 copies each picture when it is sent, so it reads the source's luma in place; either way one buffer serves every frame.
        #expect(input.conversionBufferAllocations == 1)
        try writer.finishWriting()

        let item = try PlayerItem(path: path)
        // Read back in the encoder's range, so that values compare unconverted.
        let output = try PlayerItemVideoOutput(item: item, pixelFormat: codec == .mjpeg ? .yuvj420p : .yuv420p)
        for number in [0, 5, 11] {
            let buffer = try #require(try output.copyPixelBuffer(forItemTime: MediaTime(seconds: (Double(number) + 0.5) / 30, preferredTimescale: 90000)))
            #expect(NumberedFrames.read(buffer) == number)
            let stride = buffer.bytesPerRow(plane: 1)
            let (topU, bottomU) = buffer.withUnsafeBytes(plane: 1) { (Int($0[30 * stride + 80]), Int($0[90 * stride + 80])) }
            let (topV, bottomV) = buffer.withUnsafeBytes(plane: 2) { (Int($0[30 * stride + 80]), Int($0[90 * stride + 80])) }
            #expect(abs(topU - 176) <= 4 && abs(bottomU - 80) <= 4, "U \(topU) above, \(bottomU) below")
            #expect(abs(topV - 80) <= 4 && abs(bottomV - 176) <= 4, "V \(topV) above, \(bottomV) below")
        }
    }
}
