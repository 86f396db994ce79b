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

/// The shared encoder (recordings and streams of a camera) given a bit rate
/// and settings that name no frame duration, as for a camera whose driver
/// lists no frame interval: every picture is encoded as given, at the rate
/// of the frames' own durations, or at 30 fps when they carry none.
@Suite(.serialized) struct SharedEncoderFrameRateTests {
    struct Case: Sendable, CustomStringConvertible {
        let codec: VideoCodec
        let frameDuration: MediaTime?
        var description: String { "\(codec), frames \(frameDuration.map { "of \($0.seconds) s" } ?? "without a duration")" }
    }

    static let cases: [Case] = [VideoCodec.h264, .hevc].flatMap { codec in
        [Case(codec: codec, frameDuration: MediaTime(value: 1, timescale: 15)), Case(codec: codec, frameDuration: nil)]
    }

    @Test(arguments: cases)
    func aBitRateAloneEncodesEveryPicture(_ test: Case) throws {
        let width = EncoderFrameRateTests.width, height = EncoderFrameRateTests.height
        let settings = VideoOutputSettings(codec: test.codec, width: width, height: height, bitRate: 1_000_000,
                                           preset: "ultrafast", encoderOptions: ["tune": "zerolatency"])
        #expect(VideoCompressor.canShare(settings))
        let compressor = try VideoCompressor(settings: settings)
        let count = 45
        var source = Data(), stream = Data()
        var delivered = 0
        for number in 0..<count {
            let frame = try EncoderFrameRateTests.texturedFrame(number)
            var packed = Data()
            for plane in 0..<3 {
                let rows = frame.rowCount(plane: plane), columns = plane == 0 ? width : width / 2
                frame.withUnsafeBytes(plane: plane) { bytes in
                    for row in 0..<rows { packed.append(contentsOf: bytes[(row * frame.bytesPerRow(plane: plane))...].prefix(columns)) }
                }
            }
            source.append(packed)
            let sample = VideoSampleBuffer(storage: packed.withUnsafeBytes { SampleStorage(copying: $0) }, layout: .raw(.yuv420p, bytesPerRow: nil),
                                           width: width, height: height, presentationTime: MediaTime(value: Int64(number), timescale: 15),
                                           duration: test.frameDuration, sequence: UInt64(number))
            let outcome = try compressor.encode(sample, wantsKeyframe: { _ in false }) { out in
                delivered += 1
                stream.append(contentsOf: out.bytes)
            }
            #expect(outcome == .encoded)
        }
        try compressor.flush { out in
            delivered += 1
            stream.append(contentsOf: out.bytes)
        }
        #expect(delivered == count)
        // The compressed frames carry their parameter sets in band: an elementary stream ffmpeg reads as it is.
        let scratch = try WriterScratchDirectory()
        let path = scratch.file(test.codec == .h264 ? "shared.h264" : "shared.hevc")
        try stream.write(to: URL(fileURLWithPath: path))
        let sourcePath = scratch.file("source.yuv")
        try source.write(to: URL(fileURLWithPath: sourcePath))
        // At the rate the encoder was told, a megabit a second buys pictures
        // close to the source; told 90000 frames a second, they were grey.
        let bitsPerFrame = Double(stream.count * 8) / Double(count)
        let expected = 1_000_000 / (test.frameDuration.map { 1 / $0.seconds } ?? 30)
        #expect(bitsPerFrame > expected * 0.4, "\(Int(bitsPerFrame)) bits a frame, \(Int(expected)) expected")
        let psnr = try EncoderFrameRateTests.lumaPSNR(of: path, against: sourcePath, framesPerSecond: 15)
        #expect(psnr.count == count)
        #expect(psnr.min() ?? 0 > 24, "lowest luma PSNR \(psnr.min() ?? 0) dB at frame \(psnr.firstIndex(of: psnr.min() ?? 0) ?? -1)")
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
        let (failure, said) = Self.stderr(during: Self.convertToDeprecatedFormat)
        #expect(failure == nil)
        #expect(said.isEmpty, "stderr got: \(said)")
    }

    /// SVT-AV1 prints its configuration through a logger of its own.
    @Test func anAV1EncoderSaysNothingOnStderr() throws {
        FFmpegLog.setHandler(nil)
        let scratch = try WriterScratchDirectory()
        let (failure, said) = Self.stderr {
            let writer = try AssetWriter(outputPath: scratch.file("clip.mkv"), fileType: .matroska)
            let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(codec: .av1, width: 320, height: 240)))
            try writer.add(input)
            try writer.startWriting()
            try writer.startSession(atSourceTime: .zero)
            for number in 0..<3 { try input.append(NumberedFrames.make(number), presentationTime: MediaTime(value: Int64(number), timescale: 30)) }
            try writer.finishWriting()
        }
        #expect(failure == nil)
        #expect(said.isEmpty, "stderr got: \(said)")
    }

    /// What `body` wrote on stderr (fd 2 into a pipe for the call; other tests write nothing there).
    static func stderr(during body: () throws -> Void) -> (failure: (any Error)?, said: String) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return (POSIXError(.EMFILE), "") }
        let saved = dup(STDERR_FILENO)
        dup2(ends[1], STDERR_FILENO)
        var failure: (any Error)?
        do { try body() } catch { failure = error }
        dup2(saved, STDERR_FILENO)
        close(saved)
        close(ends[1])
        var said = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            if count <= 0 { break }
            said.append(contentsOf: buffer.prefix(count))
        }
        close(ends[0])
        return (failure, String(decoding: said, as: UTF8.self))
    }
}
