@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// `record --start-paused --pre-roll`: the media before a resume is in the
/// file, from a keyframe, without a gap or a repeat. The test pattern draws
/// each frame's number into the picture, so the file itself says which
/// frames it holds; the test tone is a sine, so a gap or a repeat in the
/// audio shows as a break in it.
@Suite(.serialized) struct PreRollCommandTests {
    static let devices = ["--video", "test-pattern", "--audio", "test-tone", "--size", "320x240"]

    /// The frame numbers the test pattern drew into each frame of a recorded
    /// file, in the order a player shows them (nil where none can be read).
    static func frameNumbers(_ path: String, width: Int = 320, height: Int = 240) throws -> [Int?] {
        let gray = path + ".gray"
        defer { unlink(gray) }
        // Each frame in the file once (no frames repeated to keep a constant rate).
        let decoded = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-i", path, "-map", "0:v", "-fps_mode", "passthrough",
                                             "-f", "rawvideo", "-pix_fmt", "gray", gray])
        try #require(decoded.status == 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: gray))
        let size = width * height
        return stride(from: 0, to: data.count - size + 1, by: size).map { offset in
            let storage = data[offset..<offset + size].withUnsafeBytes { SampleStorage(copying: $0) }
            let frame = VideoSampleBuffer(storage: storage, layout: .raw(.yuv420p, bytesPerRow: width), width: width, height: height,
                                          presentationTime: .zero, duration: nil, sequence: 0)
            return TestPatternRenderer.counter(in: frame)
        }
    }

    /// The largest break in a recorded sine of `hertz` (as a share of its
    /// amplitude): how far each sample is from what the two before it
    /// predict. A steady sine predicts itself; a gap or a repeat does not.
    static func largestBreakInTone(_ path: String, hertz: Double = 440) throws -> (breakShare: Double, samples: Int) {
        let raw = path + ".s16"
        defer { unlink(raw) }
        let decoded = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-i", path, "-map", "0:a", "-ac", "1", "-ar", "48000", "-f", "s16le", raw])
        try #require(decoded.status == 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        let samples: [Double] = data.withUnsafeBytes { bytes in bytes.bindMemory(to: Int16.self).map { Double($0) } }
        try #require(samples.count > 10_000)
        let factor: Double = 2 * cos(2 * Double.pi * hertz / 48_000)
        // The encoder's first and last blocks (priming, padding) are left out.
        let body = 2048..<(samples.count - 2048)
        var amplitude = 1.0, largest = 0.0
        for index in body {
            amplitude = max(amplitude, abs(samples[index]))
            let predicted: Double = factor * samples[index - 1] - samples[index - 2]
            largest = max(largest, abs(samples[index] - predicted))
        }
        return (largest / amplitude, samples.count)
    }

    /// The media time (seconds) of the pre-roll in `event`, as progress reports it.
    static func preRoll(_ event: [String: Any]) -> (duration: Double, bytes: Int, dropped: Int)? {
        guard let held = event["preRoll"] as? [String: Any], let duration = held["duration"] as? Double,
              let bytes = held["bytes"] as? Int, let dropped = held["dropped"] as? Int else { return nil }
        return (duration, bytes, dropped)
    }

    @Test func aSignalledResumeWritesThePreRollFirstWithoutAGapOrARepeat() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.devices + ["--start-paused", "--pre-roll", "1s", "out.mp4"], in: scratch.url)
        let paused = try recorder.waitFor { $0["event"] as? String == "paused" }
        #expect(paused["cause"] as? String == "start")
        // Paused long enough for the ring to have let go of its oldest stretch.
        try recorder.waitFor { $0["event"] as? String == "progress" && (Self.preRoll($0)?.duration ?? 0) >= 1.5 }
        usleep(1_000_000)
        recorder.signal(SIGUSR2)
        let resumed = try recorder.waitFor { $0["event"] as? String == "resumed" }
        #expect(resumed["cause"] as? String == "signal")
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["paused"] as? Bool) == false && ($0["duration"] as? Double ?? 0) >= 3 }
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let finished = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        // A machine loaded enough to overflow the writer's queue loses samples, and says so (4800,
        // 0.1 s of the tone, in one full run of the whole suite): what must hold is that a break in
        // the tone below comes with drops reported, never hidden.
        let dropped = try #require(finished["dropped"] as? Int)

        // Nothing was written before the resume but the pre-roll: at least
        // 1 s, at most 1 s and one keyframe interval (1 s with a pre-roll).
        let preRoll = try #require(resumed["preRoll"] as? Double)
        #expect(preRoll >= 1 && preRoll <= 2 + 1e-6, "pre-roll \(preRoll) s")
        // Every ring stretch the progress events saw stayed within that too.
        for event in recorder.events where event["event"] as? String == "progress" && event["paused"] as? Bool == true {
            #expect((Self.preRoll(event)?.duration ?? 0) <= 2 + 1.0 / 30 + 1e-6)
        }

        let numbers = try Self.frameNumbers(scratch.file("out.mp4"))
        let frames = try #require(finished["frames"] as? Int)
        #expect(numbers.count == frames)
        let first = try #require(numbers.first ?? nil)
        // The first frame is the ring's keyframe, after the start (frame 0):
        // the ring let its oldest stretch go…
        #expect(first >= 30, "the file starts at frame \(first)")
        // … and every frame after it follows, none missing, none repeated.
        #expect(numbers == Array(first..<(first + numbers.count)).map(Optional.some))
        // The pre-roll is that many frames (30 fps) of the file.
        let duration = try #require(finished["duration"] as? Double)
        #expect(abs(Double(numbers.count) / 30 - duration) <= 1.0 / 30 + 1e-6)

        // The audio covers the same time, its sine unbroken across the resume.
        let audioSamples = try #require(finished["audioSamples"] as? Int)
        #expect(abs(Double(audioSamples) / 48_000 - duration) <= 1.0 / 30 + 1e-6, "\(audioSamples) audio samples for \(duration) s")
        let tone = try Self.largestBreakInTone(scratch.file("out.mp4"))
        #expect(tone.breakShare < 0.05 || dropped > 0, "the tone breaks by \(tone.breakShare) of its amplitude, none dropped")
    }

    /// The pre-roll counts against the limits like any other media: a
    /// duration limit shorter than it ends the file inside it, and the file
    /// holds exactly what was reported.
    @Test func aLimitReachedInsideThePreRollEndsTheFileThere() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.devices + ["--start-paused", "--pre-roll", "2s", "--max-duration", "1", "out.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" && (Self.preRoll($0)?.duration ?? 0) >= 2 }
        recorder.signal(SIGUSR2)
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let finished = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        #expect(finished["reason"] as? String == "max-duration")
        let duration = try #require(finished["duration"] as? Double)
        #expect(abs(duration - 1) <= 1.0 / 30 + 1e-6, "\(duration) s")
        let numbers = try Self.frameNumbers(scratch.file("out.mp4"))
        #expect(numbers.count == finished["frames"] as? Int)
        let seconds = Double(numbers.count) / 30
        #expect(abs(seconds - 1) <= 0.034, "\(numbers.count) frames")
        let first = try #require(numbers.first ?? nil)
        #expect(numbers == Array(first..<(first + numbers.count)).map(Optional.some))
        let audioSamples = try #require(finished["audioSamples"] as? Int)
        #expect(abs(Double(audioSamples) / 48_000 - duration) <= 1.0 / 30 + 1e-6, "\(audioSamples) audio samples")
    }

    /// A recording that starts paused makes its file at the first resume, not before.
    @Test func anArmedRecordingMakesItsFileAtTheFirstResume() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(Self.devices + ["--start-paused", "--pre-roll", "1s", "out.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" && (Self.preRoll($0)?.duration ?? 0) >= 1 }
        #expect(scratch.contents == [], "a file waits on disk before any resume: \(scratch.contents)")
        recorder.signal(SIGUSR2)
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["paused"] as? Bool) == false && ($0["duration"] as? Double ?? 0) >= 1.5 }
        #expect(scratch.contents == ["out.mp4"])
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let finished = try recorder.waitFor(5) { $0["event"] as? String == "finished" }
        #expect(try Self.frameNumbers(scratch.file("out.mp4")).count == finished["frames"] as? Int)
    }

    /// A long pre-roll at a high bit rate (lossless video) stays within
    /// --pre-roll-memory: the oldest stretches go and are counted, and what
    /// is left still begins at a keyframe.
    @Test func thePreRollStaysWithinItsMemory() throws {
        let scratch = try RecordScratch()
        let limit = 1_048_576
        let recorder = try RunningRecorder(Self.devices + ["--crf", "0", "--preset", "ultrafast", "--start-paused", "--pre-roll", "30s",
                                                           "--pre-roll-memory", "1MiB", "out.mp4"], in: scratch.url)
        try recorder.waitFor(60) { $0["event"] as? String == "progress" && (Self.preRoll($0)?.dropped ?? 0) > 0 }
        recorder.signal(SIGUSR2)
        try recorder.waitFor { $0["event"] as? String == "resumed" }
        try recorder.waitFor { $0["event"] as? String == "progress" && ($0["paused"] as? Bool) == false && ($0["duration"] as? Double ?? 0) >= 1 }
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0, "stderr: \(recorder.stderr)")
        let held = recorder.events.filter { $0["event"] as? String == "progress" }.compactMap(Self.preRoll)
        #expect(!held.isEmpty)
        for entry in held { #expect(entry.bytes <= limit, "the pre-roll held \(entry.bytes) bytes") }
        // What it held was shorter than asked: the memory, not the time, bounded it.
        let resumed = try #require(recorder.events.first { $0["event"] as? String == "resumed" })
        #expect((resumed["preRoll"] as? Double ?? 30) < 30)
        // Lossless frames on a busy machine may be dropped before they are
        // encoded (counted): none is repeated, and every one missing is
        // counted (as are any lost after the last one, before the stop).
        let numbers = try Self.frameNumbers(scratch.file("out.mp4")).compactMap { $0 }
        let first = try #require(numbers.first), last = try #require(numbers.last)
        #expect(zip(numbers.dropFirst(), numbers).allSatisfy { $0 > $1 }, "no frame twice, in order")
        let finished = try #require(recorder.events.last { $0["event"] as? String == "finished" })
        let missing = last - first + 1 - numbers.count
        #expect(missing <= finished["droppedFrames"] as? Int ?? -1, "\(numbers.count) frames from \(first) to \(last), \(missing) missing")
    }
}
