import Foundation
import Testing
@testable import CaptureKit

/// Packets that wait for a header (a copied H.264 camera's parameter sets
/// come with its first keyframe) keep their times: writing the header may
/// change a stream's time base (Matroska's becomes 1/1000), and audio kept
/// from before it once played at 48 times its time, a 1.5 s segment
/// lasting 13 s (seen on a stalled machine, where a second of audio came
/// before the camera's first keyframe).
@Suite struct DeferredHeaderTimingTests {
    @Test(arguments: ["mkv", "mp4", "mov"])
    func audioFromBeforeTheHeaderPlaysInPlace(container: String) throws {
        let units = InBandH264Tests.accessUnits
        try #require(units.count == InBandH264Tests.frameCount)
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("late-header.\(container)")
        let writer = try AssetWriter(outputPath: path)
        let video = AssetWriterInput(outputSettings: .passthrough(.video(codecName: "h264", width: 160, height: 120)))
        let audio = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: .aac, sampleRate: 48000, channels: 2)))
        try writer.add(video)
        try writer.add(audio)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        // A second of audio first: its packets wait for the video's parameter sets.
        try WriterFormatTests.appendTone(audio, seconds: 1)
        let frame = MediaTime(value: 1, timescale: 30)
        for (number, unit) in units.enumerated() {
            try unit.withUnsafeBytes {
                try video.appendCompressed($0, presentationTime: frame * Int64(number), isKeyframe: number % InBandH264Tests.gop == 0)
            }
        }
        try WriterFormatTests.appendTone(audio, seconds: 1, from: MediaTime(value: 1, timescale: 1))
        try writer.endSession(atSourceTime: MediaTime(value: 2, timescale: 1))
        try writer.finishWriting()

        let packets = try FFprobe.json(["-select_streams", "a:0", "-show_entries", "packet=pts_time", path])["packets"] as? [[String: Any]] ?? []
        let times = packets.compactMap { ($0["pts_time"] as? String).flatMap(Double.init) }
        try #require(times.count > 80, "\(times.count) audio packets")
        // 2 s of AAC frames, each 1024 samples (21.3 ms) after the one before.
        #expect(times.last! < 2.05, "\(container): the last audio packet at \(times.last!) s")
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { abs($0 - 1024.0 / 48000) < 0.002 }, "\(container): steps \(Set(steps.map { ($0 * 1000).rounded() }).sorted()) ms")
        let format = try FFprobe.format(path)
        let duration = try #require(Double(format["duration"] as? String ?? ""))
        #expect(abs(duration - 2) < 0.05, "\(container) lasts \(duration) s")
    }
}
