import Foundation
import Testing
@testable import CaptureKit

/// A recording reports the samples lost inside what it recorded, by its
/// devices and by the queues before its writer: not those lost before it
/// began on a session that was already running, nor those of a pause,
/// except what its pre-roll takes back.
@Suite struct LossCountingTests {
    @Test func theLogCountsLossesByTime() {
        let log = SampleLossLog()
        let second = { (seconds: Int64) in MediaTime(value: seconds, timescale: 1) }
        log.record(3, at: second(10))
        log.record(0, at: second(11))
        log.record(4, at: second(12))
        log.record(5, at: second(14))
        #expect(log.total == 12)
        #expect(log.lost(before: second(10)) == 0)
        #expect(log.lost(before: MediaTime(value: 10_000_000_001, timescale: MonotonicClock.timescale)) == 3)
        #expect(log.lost(before: second(13)) == 7)
        #expect(log.lost(from: second(10), before: second(12)) == 3, "a loss at the end of a stretch is the next one's")
        #expect(log.lost(from: second(11), before: nil) == 9)
        #expect(log.lost(from: second(15), before: nil) == 0)
        #expect(log.lost(from: .negativeInfinity, before: .positiveInfinity) == 12)
        // A stamp out of order goes with the latest.
        log.record(1, at: second(13))
        #expect(log.lost(from: second(14), before: second(15)) == 6)
    }

    @Test func losesOldLossesOneByOneButNotTheirCount() {
        let log = SampleLossLog(capacity: 8)
        for index in 0..<20 { log.record(1, atNanoseconds: Int64(index) * 1000) }
        #expect(log.total == 20)
        // The latest losses are still told apart…
        #expect(log.lost(from: MediaTime(value: 15_000, timescale: MonotonicClock.timescale), before: nil) == 5)
        // …the oldest are counted as lost before any time asked about.
        #expect(log.lost(before: .zero) <= 20 - 8)
        #expect(log.lost(before: MediaTime(value: 19_001, timescale: MonotonicClock.timescale)) == 20)
    }

    /// A device that keeps no log: its count is read as it grows.
    final class CountingMicrophone: CaptureSource, @unchecked Sendable {
        // @unchecked: `lost` is guarded by `lock`.
        let mediaType = MediaType.audio
        let path = "counting"
        let localizedName = "Counting microphone"
        let modelID: String? = nil
        let videoFormat: CaptureVideoFormat? = nil
        let audioFormat: CaptureAudioFormat? = nil
        private let lock = NSLock()
        private var lost = 0
        var droppedByDevice: Int { lock.withLock { lost } }
        func lose(_ frames: Int) { lock.withLock { lost += frames } }
        func open() throws(CaptureError) {}
        func close() {}
        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd { .stopped }
    }

    @Test func stretchesCountWhatWasLostInsideThem() {
        let camera = LosingCamera(), microphone = CountingMicrophone(), queue = SampleLossLog()
        let second = { (seconds: Int64) in MediaTime(value: seconds, timescale: 1) }
        var losses = RecordedLosses(devices: [camera, microphone], queues: [(queue, .audio)])
        camera.losses.record(1, at: second(1))
        microphone.lose(100)
        losses.open(at: second(2))
        camera.losses.record(2, at: second(3))
        queue.record(480, at: second(3))
        microphone.lose(960)
        #expect(losses.count == .init(device: 2 + 960, queue: 480, audio: 960 + 480))
        losses.close(at: second(4))
        // Paused: nothing lost now counts…
        camera.losses.record(4, at: second(5))
        queue.record(1, at: second(5))
        microphone.lose(48)
        #expect(losses.count == .init(device: 962, queue: 480, audio: 1440))
        // …but the resumed stretch begins before the pause's end (a pre-roll) and takes what it covers.
        losses.open(at: second(5))
        camera.losses.record(8, at: second(6))
        #expect(losses.count == .init(device: 962 + 4 + 8, queue: 481, audio: 1441))
        losses.close(at: .positiveInfinity)
        camera.losses.record(16, at: second(7))
        #expect(losses.count == .init(device: 974, queue: 481, audio: 1441))
    }

    /// A live camera (a small gray frame every 20 ms) that loses the next
    /// frames when told to, logging them as a camera's driver does.
    final class LosingCamera: CaptureSource, @unchecked Sendable {
        // @unchecked: `toLose` and `lost` are guarded by `lock`.
        let mediaType = MediaType.video
        let path = "losing"
        let localizedName = "Losing camera"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let losses = SampleLossLog()
        var lossLog: SampleLossLog? { losses }
        var droppedByDevice: Int { losses.total }
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: .raw(.gray8, bytesPerRow: nil), width: 64, height: 48,
                               frameDuration: MediaTime(value: 1, timescale: 50), fourcc: "GREY")
        }
        private let lock = NSLock()
        private var toLose = 0

        /// Loses the next `frames` frames, and returns once they are lost.
        func lose(_ frames: Int) {
            let before = losses.total
            lock.withLock { toLose += frames }
            while losses.total < before + frames { usleep(2_000) }
        }

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            var number = 0
            var next = MonotonicClock.nowNanoseconds()
            while true {
                if stop.wait(untilNanoseconds: next) { return .stopped }
                let loses = lock.withLock { () -> Bool in
                    guard toLose > 0 else { return false }
                    toLose -= 1
                    return true
                }
                if loses {
                    losses.record(1, atNanoseconds: next)
                } else {
                    deliver(SessionLifecycleTests.grayFrame(number, shade: 7, at: next))
                }
                number += 1
                next += 20_000_000
            }
        }
    }


    @Test func onlyTheLossesInsideWhatWasRecordedCount() throws {
        let scratch = try WriterScratchDirectory()
        let camera = LosingCamera()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: camera))
        let output = MovieFileOutput()
        // A resume writes from the latest keyframe at least 0.5 s before it.
        output.preRollDuration = MediaTime(value: 1, timescale: 2)
        output.settings.keyframeInterval = MediaTime(value: 1, timescale: 5)
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }

        // Lost before the recording began: not its loss.
        camera.lose(4)
        let recorder = SessionLifecycleTests.Recorder()
        output.startRecording(to: scratch.file("losses.mp4"), recordingDelegate: recorder)
        #expect(eventually { output.statistics.videoFrames >= 10 })
        camera.lose(3)
        #expect(eventually { output.statistics.videoFrames >= 20 })
        #expect(output.statistics.droppedByDevice == 3)

        // Lost while paused, longer ago than the pre-roll reaches back at the resume: not in the file.
        output.pauseRecording()
        #expect(eventually { output.statistics.isPaused })
        camera.lose(7)
        usleep(1_200_000)
        output.resumeRecording()
        #expect(eventually { !output.statistics.isPaused })
        #expect(output.statistics.droppedByDevice == 3)

        // Lost while paused, inside the pre-roll the resume writes: in the file.
        output.pauseRecording()
        #expect(eventually { output.statistics.isPaused && output.statistics.preRollDuration.seconds >= 0.3 })
        camera.lose(6)
        output.resumeRecording()
        #expect(eventually { !output.statistics.isPaused })
        let frames = output.statistics.videoFrames
        #expect(eventually { output.statistics.videoFrames >= frames + 10 })
        output.stopRecording()
        #expect(recorder.waitForEnd())
        #expect(recorder.error == nil)

        #expect(camera.droppedByDevice == 4 + 3 + 7 + 6)
        #expect(output.statistics.droppedByDevice == 3 + 6)
        #expect(output.statistics.droppedVideoFrames == 9 && output.statistics.droppedAudioSamples == 0)
        let file = try #require(recorder.files.first)
        #expect(try FFprobe.frames(file.path).count == file.videoFrames)
    }
}
