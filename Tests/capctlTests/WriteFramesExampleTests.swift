import Foundation
import Testing

/// Examples/WriteFrames, built with the package and run: camera sample
/// buffers appended to an asset writer input given a bit rate and no frame
/// rate make a file whose pictures are the camera's (not grey), read back
/// with a player item video output.
@Suite struct WriteFramesExampleTests {
    @Test func appendedSampleBuffersReadBackAsTheCapturedPicture() throws {
        let scratch = try RecordScratch()
        let (status, said, errors) = try runExample("WriteFrames", [scratch.path, "60"])
        #expect(status == 0, "stderr: \(errors)")
        #expect(errors.isEmpty, "a library call wrote on stderr: \(errors)")
        #expect(said.contains(scratch.file("frames.mp4") + ": 60 frames"), "\(said)")
        #expect(try packetTimes(scratch.file("frames.mp4")).count == 60)

        // The frame read back is the one captured: PSNR against it, and a picture with detail.
        let psnr = try runTool("ffmpeg", ["-v", "error", "-i", scratch.file("captured.ppm"), "-i", scratch.file("read-back.ppm"),
                                          "-lavfi", "psnr=stats_file=-", "-f", "null", "-"])
        let value = psnr.stdout.split(separator: " ").first { $0.hasPrefix("psnr_avg:") }.flatMap { Double($0.dropFirst(9)) ?? ($0.hasSuffix("inf") ? 99 : nil) }
        #expect((value ?? 0) > 30, "PSNR \(psnr.stdout)")
        let stats = try runTool("ffmpeg", ["-v", "error", "-i", scratch.file("read-back.ppm"), "-vf", "format=gray,signalstats,metadata=print:file=-",
                                           "-f", "null", "-"])
        let lowest = stats.stdout.split(separator: "\n").first { $0.contains("signalstats.YMIN=") }.flatMap { Double($0.split(separator: "=").last ?? "") } ?? 0
        let highest = stats.stdout.split(separator: "\n").first { $0.contains("signalstats.YMAX=") }.flatMap { Double($0.split(separator: "=").last ?? "") } ?? 0
        #expect(highest - lowest > 100, "a flat picture: \(stats.stdout)")
    }
}
