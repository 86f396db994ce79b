import Foundation
import Testing
@testable import CaptureKit

/// Where a movie's files end when its video comes late or far apart, as a
/// camera starved of CPU delivers it: audio stops at the limit, not at the
/// frame that happened to reveal it, and the last frame shows until the end.
@Suite struct MovieFileOutputTimingTests {
    /// A one-way signal between the scripted sources' threads.
    final class Gate: @unchecked Sendable {
        private let condition = NSCondition()
        private var isOpen = false

        func open() {
            condition.lock()
            isOpen = true
            condition.broadcast()
            condition.unlock()
        }

        func wait() {
            condition.lock()
            while !isOpen { _ = condition.wait(until: Date(timeIntervalSinceNow: 10)) }
            condition.unlock()
        }
    }

    /// Video frames every 200 ms from `start` up to `before`, then (once
    /// `release` opens) one frame at `late`: a camera that stalled.
    final class StallingCamera: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.video
        let path = "stalling"
        let localizedName = "Stalling"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        let width = 64, height = 48
        let start: Int64, before: Int64, late: Int64
        let started = Gate(), release = Gate()
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: .raw(.gray8, bytesPerRow: nil), width: width, height: height,
                               frameDuration: MediaTime(value: 1, timescale: 5), fourcc: "GREY")
        }

        init(start: Int64, before: Int64, late: Int64) {
            self.start = start
            self.before = before
            self.late = late
        }

        func open() throws(CaptureError) {}
        func close() {}

        private func frame(at time: Int64, number: Int) -> SampleBuffer {
            let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: number * 20), count: width * height)
            return .video(VideoSampleBuffer(storage: bytes.withUnsafeBytes { SampleStorage(copying: $0) }, layout: .raw(.gray8, bytesPerRow: nil),
                                            width: width, height: height, presentationTime: MediaTime(value: time, timescale: MonotonicClock.timescale),
                                            duration: nil, sequence: UInt64(number)))
        }

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            var number = 0
            var time = start
            while time < before {
                deliver(frame(at: time, number: number))
                if number == 0 { started.open() }
                number += 1
                time += 200_000_000
            }
            release.wait()
            deliver(frame(at: late, number: number))
            _ = stop.wait(untilNanoseconds: Int64.max)
            return .stopped
        }
    }

    /// 20 ms of stereo 48 kHz audio at a time from `start` up to `end`,
    /// all at once once the camera's first frame is out; then opens `done`.
    final class SteadyMicrophone: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.audio
        let path = "steady"
        let localizedName = "Steady"
        let modelID: String? = nil
        let videoFormat: CaptureVideoFormat? = nil
        let droppedByDevice = 0
        let audioFormat: CaptureAudioFormat? = CaptureAudioFormat(sampleFormat: .s16, sampleRate: 48000, channels: 2)
        let start: Int64, end: Int64
        let after: Gate, done: Gate

        init(start: Int64, end: Int64, after: Gate, done: Gate) {
            self.start = start
            self.end = end
            self.after = after
            self.done = done
        }

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            after.wait()
            var time = start
            var index = 0
            while time < end {
                let samples = Tone.samples(count: 960, channels: 2, rate: 48000, start: index * 960)
                let storage = samples.withUnsafeBytes { SampleStorage(copying: $0) }
                deliver(.audio(AudioSampleBuffer(storage: storage, format: .s16, channels: 2, sampleRate: 48000, frameCount: 960,
                                                 presentationTime: MediaTime(value: time, timescale: MonotonicClock.timescale))))
                time += 20_000_000
                index += 1
            }
            done.open()
            _ = stop.wait(untilNanoseconds: Int64.max)
            return .stopped
        }
    }

    final class Recorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        private let condition = NSCondition()
        private(set) var files: [RecordedFile] = []
        private(set) var reason: RecordingStopReason?

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            condition.lock()
            files.append(file)
            condition.unlock()
        }

        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            condition.lock()
            self.reason = reason
            condition.broadcast()
            condition.unlock()
        }

        func waitForEnd() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: 20)
            while reason == nil { if !condition.wait(until: deadline) { return false } }
            return true
        }
    }

    /// Frames every 33 333 333 ns (30 fps, truncated to the nanosecond) from
    /// `start`: the 30th and the 60th fall a few nanoseconds short of 1 s
    /// and 2 s.
    final class TruncatedClockCamera: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.video
        let path = "truncated"
        let localizedName = "Truncated clock"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        let start: Int64
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: .raw(.gray8, bytesPerRow: nil), width: 64, height: 48,
                               frameDuration: MediaTime(value: 1, timescale: 30), fourcc: "GREY")
        }

        init(start: Int64) { self.start = start }
        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            for number in 0..<90 {
                let time = start + Int64(number) * 33_333_333
                if stop.wait(untilNanoseconds: time) { return .stopped }
                let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: number * 5), count: 64 * 48)
                deliver(.video(VideoSampleBuffer(storage: bytes.withUnsafeBytes { SampleStorage(copying: $0) },
                                                 layout: .raw(.gray8, bytesPerRow: nil), width: 64, height: 48,
                                                 presentationTime: MediaTime(value: time, timescale: MonotonicClock.timescale),
                                                 duration: nil, sequence: UInt64(number))))
            }
            _ = stop.wait(untilNanoseconds: Int64.max)
            return .stopped
        }
    }

    /// A frame a few nanoseconds short of a segment's end or of the
    /// duration limit lands, in the file's 90 kHz clock, on the cut itself,
    /// where it would never show: it begins the next segment instead, and
    /// the limit leaves it out, so each file holds the frames it reports.
    @Test func aFrameJustShortOfACutBelongsAfterIt() throws {
        let scratch = try WriterScratchDirectory()
        let camera = TruncatedClockCamera(start: MonotonicClock.nowNanoseconds())
        let output = MovieFileOutput()
        output.maxRecordingDuration = MediaTime(value: 2, timescale: 1)
        output.segmentDuration = MediaTime(value: 1, timescale: 1)
        let template = try FileNameTemplate(scratch.file("cut-%n.mp4"))
        let recorder = try record([camera], to: output) { output.startRecording(toTemplate: template, recordingDelegate: $0) }

        #expect(recorder.reason == .maxDuration)
        let files = recorder.files.sorted { $0.index < $1.index }
        #expect(files.map(\.videoFrames) == [30, 30])
        for file in files {
            #expect(try FFprobe.frames(file.path).count == file.videoFrames, "\(file.path)")
            #expect(abs(file.duration.seconds - 1) < 1e-6, "\(file.path) lasts \(file.duration.seconds) s")
        }
    }

    /// Starts recording with `start`, runs a session of `sources` into
    /// `output` until the recording ends, and returns what its delegate heard.
    func record(_ sources: [any CaptureSource], to output: CaptureFileOutput, start: (Recorder) -> Void) throws -> Recorder {
        let recorder = Recorder()
        start(recorder)
        let session = CaptureSession()
        for source in sources { session.addInput(CaptureInput(source: source)) }
        session.addOutput(output)
        try session.startRunning()
        #expect(recorder.waitForEnd())
        session.stopRunning()
        return recorder
    }

    /// (duration, frames) of a file's video and audio as ffprobe reads them.
    func tracks(_ path: String) throws -> (video: Double, audio: Double, frames: Int) {
        let streams = try FFprobe.streams(path)
        let video = try #require(streams.first { $0["codec_type"] as? String == "video" })
        let audio = try #require(streams.first { $0["codec_type"] as? String == "audio" })
        let duration = { (stream: [String: Any]) in (stream["duration"] as? String).flatMap(Double.init) ?? .nan }
        return (duration(video), duration(audio), Int(video["nb_read_frames"] as? String ?? "") ?? -1)
    }

    /// The camera stalls at 2.2 s; the microphone has delivered up to 4 s
    /// before the camera's next frame (at 3.2 s) shows the 3 s limit passed.
    @Test(arguments: [true, false])
    func audioStopsAtTheDurationLimitWhileVideoLags(fragmented: Bool) throws {
        let scratch = try WriterScratchDirectory()
        let start = MonotonicClock.nowNanoseconds()
        let camera = StallingCamera(start: start, before: start + 2_100_000_000, late: start + 3_200_000_000)
        let microphone = SteadyMicrophone(start: start, end: start + 4_000_000_000, after: camera.started, done: camera.release)
        let output = MovieFileOutput()
        output.settings.fragmentInterval = fragmented ? MediaTime(value: 1, timescale: 1) : .invalid
        output.maxRecordedDuration = MediaTime(value: 3, timescale: 1)
        let path = scratch.file("lagging.mp4")
        let recorder = try record([camera, microphone], to: output) { output.startRecording(to: path, recordingDelegate: $0) }

        #expect(recorder.reason == .maxDuration)
        let file = try #require(recorder.files.first)
        #expect(file.videoFrames == 11)
        #expect(file.audioSamples == 3 * 48000)
        let written = try tracks(path)
        #expect(written.frames == 11)
        // AAC codes 1024 samples at a time: the audio may run up to one such frame longer.
        #expect(abs(written.video - 3) < 0.03, "the video lasts \(written.video) s")
        #expect(written.audio >= 3 - 0.001 && written.audio < 3 + 0.03, "the audio lasts \(written.audio) s")
    }

    /// One-second segments while the camera lags: each file holds one second
    /// of audio, and together they hold the three seconds recorded.
    @Test func audioSwitchesFilesAtTheSegmentEndWhileVideoLags() throws {
        let scratch = try WriterScratchDirectory()
        let start = MonotonicClock.nowNanoseconds()
        let camera = StallingCamera(start: start, before: start + 1_300_000_000, late: start + 2_200_000_000)
        let microphone = SteadyMicrophone(start: start, end: start + 4_000_000_000, after: camera.started, done: camera.release)
        let output = MovieFileOutput()
        output.maxRecordingDuration = MediaTime(value: 3, timescale: 1)
        output.segmentDuration = MediaTime(value: 1, timescale: 1)
        let template = try FileNameTemplate(scratch.file("part-%n.mp4"))
        let recorder = try record([camera, microphone], to: output) { output.startRecording(toTemplate: template, recordingDelegate: $0) }

        #expect(recorder.reason == .maxDuration)
        let files = recorder.files.sorted { $0.index < $1.index }
        #expect(files.count == 3)
        #expect(files.map(\.audioSamples) == [48000, 48000, 48000])
        #expect(files.map(\.videoFrames).reduce(0, +) == 8)
        for file in files.prefix(2) {
            let written = try tracks(file.path)
            #expect(written.audio >= 1 - 0.001 && written.audio < 1 + 0.03, "\(file.path): the audio lasts \(written.audio) s")
        }
    }
}
