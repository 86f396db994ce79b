import CFFmpeg
@testable import CaptureKit
import Foundation
import Testing

/// PixelBufferPool and AssetWriterInputPixelBufferAdaptor: buffers reused
/// once the program and every encoder let go of them.
@Suite struct PixelBufferPoolTests {
    @Test func aBufferIsReusedOnceReleased() throws {
        let pool = try PixelBufferPool(pixelFormat: .yuv420p, width: 64, height: 48)
        var first: PixelBuffer? = try pool.makePixelBuffer()
        let firstID = ObjectIdentifier(first!)
        let second = try pool.makePixelBuffer()
        #expect(ObjectIdentifier(second) != firstID, "a buffer still held is not handed out again")
        #expect(second.pixelFormat == .yuv420p && second.width == 64 && second.height == 48)
        first = nil
        let third = try pool.makePixelBuffer()
        #expect(ObjectIdentifier(third) == firstID)
        #expect(pool.bufferCount == 2)
    }

    @Test func aBufferAnEncoderHoldsIsNotReused() throws {
        let pool = try PixelBufferPool(pixelFormat: .nv12, width: 64, height: 48)
        var buffer: PixelBuffer? = try pool.makePixelBuffer()
        let id = ObjectIdentifier(buffer!)
        // What an encoder does with a frame it keeps (a lookahead): a reference to its memory.
        var held = av_buffer_ref(buffer!.frame.pointee.buf.0)
        #expect(held != nil)
        buffer = nil
        var other: PixelBuffer? = try pool.makePixelBuffer()
        #expect(ObjectIdentifier(other!) != id, "the encoder still reads it")
        other = nil
        av_buffer_unref(&held)
        let again = try pool.makePixelBuffer()
        #expect(ObjectIdentifier(again) == id, "released by the encoder too: reused")
        #expect(pool.bufferCount == 2)
    }

    @Test func aLockedBufferIsNotReusedAndTheLimitHolds() throws {
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 16, height: 16, maximumBufferCount: 1)
        _ = try pool.makePixelBuffer()
        let buffer = try pool.makePixelBuffer()
        #expect(throws: WriterError.self) { try pool.makePixelBuffer() }
        _ = buffer
    }

    @Test func theAdaptorsPoolFeedsAWriterWithOneBuffer() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("pool.mp4")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
            codec: .h264, width: 320, height: 240, preset: "ultrafast", expectedFrameDuration: MediaTime(value: 1, timescale: 30))))
        try writer.add(input)
        let adaptor = AssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input, sourcePixelBufferAttributes: PixelBufferAttributes(pixelFormat: .bgra, width: 320, height: 240))
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        #expect(pool.pixelFormat == .bgra && pool.width == 320 && pool.height == 240)
        for number in 0..<20 {
            let buffer = try pool.makePixelBuffer()
            #expect(buffer.lockBaseAddress([]))
            let base = try #require(buffer.baseAddress)
            for row in 0..<240 { (base + row * buffer.bytesPerRow).initializeMemory(as: UInt8.self, repeating: UInt8(number * 10), count: 320 * 4) }
            buffer.unlockBaseAddress([])
            try adaptor.append(buffer, withPresentationTime: MediaTime(value: Int64(number), timescale: 30))
        }
        try writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(pool.bufferCount == 1, "each buffer came back after its append")
        #expect(try FFprobe.frames(path).count == 20)
    }

    @Test func theAdaptorTakesACapturedFramesImageBuffer() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("captured.mp4")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(codec: .h264, width: 320, height: 240, preset: "ultrafast")))
        try writer.add(input)
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: input)
        #expect(adaptor.pixelBufferPool?.width == 320)
        let samples = try ImageBufferTests.samples("NV12", count: 8)
        try writer.startWriting()
        try writer.startSession(atSourceTime: samples[0].presentationTime)
        for sample in samples { try adaptor.append(try #require(sample.imageBuffer), withPresentationTime: sample.presentationTime) }
        try writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(try FFprobe.frames(path).count == 8)
    }
}
