import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// An input given a bit rate and no frame duration, as an AVFoundation
/// program sets one up, encodes every frame as it was given: its encoder
/// learns the rate from the frames' times, so rate control spends the bit
/// rate on the frames that come (told nothing, it spent it on 90000 frames a
/// second and wrote flat grey pictures).
@Suite(.serialized) struct EncoderFrameRateTests {
    static let width = 320, height = 240

    /// A picture with detail everywhere that moves from frame to frame:
    /// diagonal ramps and a pseudo-random texture, in 4:2:0.
    static func texturedFrame(_ number: Int) throws -> PixelBuffer {
        let buffer = try PixelBuffer(width: width, height: height, pixelFormat: .yuv420p)
        for plane in 0..<3 {
            let stride = buffer.bytesPerRow(plane: plane)
            let rows = buffer.rowCount(plane: plane)
            let columns = plane == 0 ? width : width / 2
            buffer.withUnsafeMutableBytes(plane: plane) { bytes in
                for y in 0..<rows {
                    for x in 0..<columns {
                        var hash = UInt32(truncatingIfNeeded: (x / 4) &* 73_856_093 ^ (y / 4) &* 19_349_663 ^ plane &* 83_492_791)
                        hash ^= hash >> 13
                        let ramp = (x * 2 + y + number * 3 + plane * 40) & 0xFF
                        bytes[y * stride + x] = UInt8(truncatingIfNeeded: (ramp * 3 + Int(hash & 0x3F)) / 4 + 16)
                    }
                }
            }
        }
        return buffer
    }

    struct Case: Sendable, CustomStringConvertible {
        let codec: VideoCodec
        let framesPerSecond: Int32
        let realTime: Bool
        var description: String { "\(codec) at \(framesPerSecond) fps\(realTime ? ", real time" : "")" }
        var fileType: FileType { codec == .vp9 || codec == .av1 ? .matroska : .mp4 }
    }

    static let cases: [Case] = VideoCodec.allCases.flatMap { codec in
        [Case(codec: codec, framesPerSecond: 15, realTime: false), Case(codec: codec, framesPerSecond: 50, realTime: true)]
    }

    @Test(arguments: cases)
    func aBitRateAloneEncodesEveryPicture(_ test: Case) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file(test.fileType == .matroska ? "clip.mkv" : "clip.mp4")
        let bitRate = 1_500_000
        let writer = try AssetWriter(outputPath: path, fileType: test.fileType)
        let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(codec: test.codec, width: Self.width, height: Self.height,
                                                                                bitRate: bitRate)))
        input.expectsMediaDataInRealTime = test.realTime
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        let count = 3 * Int(test.framesPerSecond)
        var source = Data()
        for number in 0..<count {
            let frame = try Self.texturedFrame(number)
            for plane in 0..<3 {
                let rows = frame.rowCount(plane: plane), columns = plane == 0 ? Self.width : Self.width / 2
                frame.withUnsafeBytes(plane: plane) { bytes in
                    for row in 0..<rows { source.append(contentsOf: bytes[(row * frame.bytesPerRow(plane: plane))...].prefix(columns)) }
                }
            }
            try input.append(frame, presentationTime: MediaTime(value: Int64(number), timescale: test.framesPerSecond))
        }
        try writer.finishWriting()
        #expect(input.writtenFrameCount == count)

        let stream = try #require(try FFprobe.streams(path).first)
        #expect(Int(stream["nb_read_frames"] as? String ?? "") == count)
        // The rate the encoder was told is the frames' own.
        #expect(stream["avg_frame_rate"] as? String == "\(test.framesPerSecond)/1", "\(stream)")
        // Rate control spent what it was asked to, within half (MJPEG has none to speak of).
        let fileBitRate = Double(try FFprobe.format(path)["bit_rate"] as? String ?? "") ?? 0
        if test.codec != .mjpeg {
            #expect(fileBitRate > Double(bitRate) * 0.5 && fileBitRate < Double(bitRate) * 1.5, "\(Int(fileBitRate)) b/s")
        }
        // Every picture is the one given: no grey frame at the start or anywhere.
        let sourcePath = scratch.file("source.yuv")
        try source.write(to: URL(fileURLWithPath: sourcePath))
        let psnr = try Self.lumaPSNR(of: path, against: sourcePath, framesPerSecond: test.framesPerSecond)
        #expect(psnr.count == count)
        #expect(psnr.min() ?? 0 > 24, "lowest luma PSNR \(psnr.min() ?? 0) dB at frame \(psnr.firstIndex(of: psnr.min() ?? 0) ?? -1)")
    }

    /// Each decoded frame's luma PSNR against the raw 4:2:0 source, in dB.
    static func lumaPSNR(of path: String, against source: String, framesPerSecond: Int32) throws -> [Double] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "\(width)x\(height)",
                             "-framerate", "\(framesPerSecond)",
                             "-i", source, "-lavfi", "[0:v]settb=1/25,setpts=N[a];[1:v]settb=1/25,setpts=N[b];[a][b]psnr=stats_file=-", "-f", "null", "-"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("psnr_y:") }.flatMap { Double($0.dropFirst(7)) ?? ($0.hasSuffix("inf") ? 99 : nil) }
        }
    }
}

/// FFmpeg's log reaches a handler a program sets, and never stderr.
@Suite(.serialized) struct FFmpegLogTests {
    /// Converting to full-range yuvj420p makes libswscale warn "deprecated pixel format used".
    static func convertToDeprecatedFormat() throws {
        _ = try NumberedFrames.convert(NumberedFrames.make(1), to: .yuvj420p)
    }

    @Test func aHandlerHearsWhatFFmpegSays() throws {
        let heard = Mutex<[String]>([])
        FFmpegLog.setHandler { _, line in heard.withLock { $0.append(line) } }
        defer { FFmpegLog.setHandler(nil) }
        try Self.convertToDeprecatedFormat()
        #expect(heard.withLock { $0 }.contains { $0.contains("deprecated pixel format") }, "\(heard.withLock { $0 })")
    }

    @Test func withoutAHandlerNothingReachesStderr() throws {
        FFmpegLog.setHandler(nil)
        // Stderr into a pipe for the call (other tests write nothing there).
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let saved = dup(STDERR_FILENO)
        dup2(ends[1], STDERR_FILENO)
        var failure: (any Error)?
        do { try Self.convertToDeprecatedFormat() } catch { failure = error }
        dup2(saved, STDERR_FILENO)
        close(saved)
        close(ends[1])
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(ends[0], &buffer, buffer.count)
        close(ends[0])
        #expect(failure == nil)
        #expect(count == 0, "stderr got: \(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self))")
    }
}
