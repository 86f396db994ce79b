import Foundation
import Testing
@testable import CaptureKit

/// Audio whose time stamps jump ahead (samples lost on their way: a
/// microphone's overrun, a process stopped or starved) is filled with
/// silence, however long the gap, and the silence is counted: the input's
/// sample count is what every reader decodes, and the audio after the gap
/// plays where its stamps put it.
@Suite struct AudioGapTests {
    /// The sample frames ffprobe decodes from the file's audio.
    static func decodedSamples(_ path: String) throws -> Int {
        let object = try FFprobe.json(["-select_streams", "a:0", "-show_entries", "frame=nb_samples", path])
        let frames = object["frames"] as? [[String: Any]] ?? []
        return frames.reduce(0) { $0 + (($1["nb_samples"] as? Int) ?? 0) }
    }

    /// 1 s of tone, a gap of `gap` seconds, 1 s of tone.
    static func writeWithGap(_ path: String, codec: AudioCodec, gap: Double) throws -> AssetWriterInput {
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: codec, sampleRate: 48000, channels: 2)))
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try WriterFormatTests.appendTone(input, seconds: 1)
        try WriterFormatTests.appendTone(input, seconds: 1, from: MediaTime(seconds: 1 + gap, preferredTimescale: 48000))
        try writer.finishWriting()
        return input
    }

    static let containers: [(AudioCodec, String)] = [(.pcm(.s16), "wav"), (.aac, "m4a"), (.aac, "mkv"), (.opus, "webm")]

    @Test(arguments: [0, 1, 2, 3], [0.3, 1.5, 4.0])
    func aGapIsFilledWithCountedSilence(container index: Int, gap: Double) throws {
        let (codec, container) = Self.containers[index]
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("gap.\(container)")
        let input = try Self.writeWithGap(path, codec: codec, gap: gap)
        let expected = Int((2 + gap) * 48000)
        let silence = Int(gap * 48000)
        // One codec frame either way: the encoder's frames, Opus's pre-skip.
        let frame = codec == .pcm(.s16) ? 1 : 1024
        #expect(abs(input.writtenSilenceSampleCount - silence) <= frame, "\(container), \(gap) s: silence \(input.writtenSilenceSampleCount)")
        #expect(abs(input.writtenAudioSampleCount - expected) <= frame, "\(container), \(gap) s: count \(input.writtenAudioSampleCount)")
        let decoded = try Self.decodedSamples(path)
        #expect(abs(decoded - input.writtenAudioSampleCount) <= frame, "\(container), \(gap) s: \(decoded) decoded, \(input.writtenAudioSampleCount) counted")
    }

    /// The tone after the gap starts where its stamps say: in WAV, which has
    /// no time stamps, only the silence puts it there.
    @Test func theAudioAfterALongGapStaysInPlace() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("gap.wav")
        _ = try Self.writeWithGap(path, codec: .pcm(.s16), gap: 2.5)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        // The samples after the header's "data" chunk heading, stereo s16.
        let marker = try #require(data.range(of: Data("data".utf8)))
        let samples = data[(marker.upperBound + 4)...].withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        func peak(from start: Double, to end: Double) -> Int {
            let range = (Int(start * 48000) * 2)..<min(samples.count, Int(end * 48000) * 2)
            return range.map { Int(abs(Int32(samples[$0]))) }.max() ?? 0
        }
        #expect(peak(from: 1.01, to: 3.49) == 0, "the gap is silent")
        #expect(peak(from: 3.51, to: 4.49) > 4000, "the tone after the gap plays from 3.5 s")
        #expect(samples.count / 2 == Int(4.5 * 48000))
    }

    /// A file switched to while its audio was lost on the way (set up as a
    /// recording sets it up): silence from its start to the first samples,
    /// and from the last ones to its session's end, counted.
    @Test(arguments: [0, 1, 2, 3])
    func lostAudioAtAFilesEdgesIsSilence(container index: Int) throws {
        let (codec, container) = Self.containers[index]
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("edges.\(container)")
        let writer = try AssetWriter(outputPath: path)
        let input = AssetWriterInput(outputSettings: .audio(AudioOutputSettings(codec: codec, sampleRate: 48000, channels: 2)))
        input.fillsAudioFromSessionStart = true
        input.fillsAudioToSessionEnd = true
        try writer.add(input)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        // 0.3 s lost, 1 s of tone, 0.2 s lost: a 1.5 s session.
        try WriterFormatTests.appendTone(input, seconds: 1, from: MediaTime(value: 3, timescale: 10))
        try writer.endSession(atSourceTime: MediaTime(value: 3, timescale: 2))
        try writer.finishWriting()
        let frame = codec == .pcm(.s16) ? 1 : 1024
        #expect(abs(input.writtenAudioSampleCount - 72000) <= frame, "\(container): \(input.writtenAudioSampleCount) counted")
        #expect(abs(input.writtenSilenceSampleCount - 24000) <= frame, "\(container): silence \(input.writtenSilenceSampleCount)")
        let decoded = try Self.decodedSamples(path)
        // Less than a codec frame: the leading silence's encoder priming is not in the file.
        #expect(abs(decoded - input.writtenAudioSampleCount) < max(frame, 2),
                "\(container): \(decoded) decoded, \(input.writtenAudioSampleCount) counted")
    }
}
