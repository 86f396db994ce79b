import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// Several cameras and a pause, one camera handing its frames over 100 ms
/// late: requests take effect at the newest frame, the late camera's frames
/// stamped before the pause are still written up to it, the on-time
/// camera's frames after the resume are not left out, and the file holds
/// the frames reported.
@Suite struct LateFrameAtPauseTests {
    /// 25 frames a second stamped on the clock, each handed over `delay`
    /// after its stamp (none while `stalled` is set).
    final class LateCamera: CaptureSource, @unchecked Sendable {
        // @unchecked: the constants never change and `stalled` is atomic.
        let mediaType = MediaType.video
        let path = "late"
        let localizedName = "Late camera"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        let delay: Int64
        /// Set: the camera delivers nothing more (it stalled) until it is cleared.
        let stalled = Atomic<Bool>(false)
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: .raw(.gray8, bytesPerRow: nil), width: 64, height: 48,
                               frameDuration: MediaTime(value: 1, timescale: 25), fourcc: "GREY")
        }

        init(delay: Int64 = 100_000_000) { self.delay = delay }

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            let start = MonotonicClock.nowNanoseconds()
            var number = 0
            while true {
                let stamp = start + Int64(number) * 40_000_000
                if stop.wait(untilNanoseconds: stamp + delay) { return .stopped }
                if !stalled.load(ordering: .relaxed) { deliver(SessionLifecycleTests.grayFrame(number, shade: 9, at: stamp)) }
                number += 1
            }
        }
    }



    /// Media times (seconds) of a track's packets, as stored: before its edit list.
    func packetTimes(_ path: String, stream: String) throws -> [Double] {
        let object = try FFprobe.json(["-ignore_editlist", "1", "-select_streams", stream, "-show_entries", "packet=pts_time", path])
        return (object["packets"] as? [[String: Any]] ?? []).compactMap { ($0["pts_time"] as? String).flatMap(Double.init) }
    }

    @Test func aLateCamerasFramesBeforeThePauseAreWritten() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: SessionLifecycleTests.TickingCamera()))
        session.addInput(CaptureInput(source: LateCamera()))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }

        let recorder = SessionLifecycleTests.Recorder()
        let path = scratch.file("late.mp4")
        output.startRecording(to: path, recordingDelegate: recorder)
        #expect(eventually { output.statistics.videoFrames >= 60 })
        output.pauseRecording()
        #expect(eventually { output.statistics.isPaused })
        usleep(500_000)
        output.resumeRecording()
        #expect(eventually { !output.statistics.isPaused })
        let frames = output.statistics.videoFrames
        #expect(eventually { output.statistics.videoFrames >= frames + 30 })
        output.stopRecording()
        #expect(recorder.waitForEnd())
        #expect(recorder.error == nil)

        let file = try #require(recorder.files.first)
        let onTime = try FFprobe.frames(path, stream: "v:0").count
        let late = try FFprobe.frames(path, stream: "v:1").count
        #expect(onTime + late == file.videoFrames, "\(onTime) + \(late) frames in the file, \(file.videoFrames) reported")

        // Where each track's first stretch ends on the file's timeline (after
        // any empty edit at its start). The pause is the earlier of the two:
        // a camera whose first frame after the resume came later holds its
        // picture before it that much longer, less than one of its frame
        // intervals (a resume at the late camera's frame had the on-time
        // camera's frames after it left out as paused).
        let structure = try #require(try MovieStructure.read(path: path))
        try #require(structure.tracks.count == 2)
        let stretchEnds = try structure.tracks.map { track in
            let firstMedia = try #require(track.edits.firstIndex { $0.mediaTime != nil })
            return track.edits[...firstMedia].reduce(0) { $0 + $1.duration.seconds }
        }
        let pause = try #require(stretchEnds.min())
        #expect(stretchEnds[0] - pause <= 0.020 + 1e-3 && stretchEnds[1] - pause <= 0.040 + 1e-3, "first stretches end at \(stretchEnds) s")
        // The late camera's frames on the file's timeline (its media from its first edit's start).
        let lateEdits = structure.tracks[1].edits
        let lateStart = lateEdits.prefix { $0.mediaTime == nil }.reduce(0) { $0 + $1.duration.seconds }
        let lateOrigin = try #require(lateEdits.first { $0.mediaTime != nil }?.mediaTime).seconds
        // Its last frame before the pause came within one of its frame intervals of it.
        let before = try packetTimes(path, stream: "v:1").map { lateStart + $0 - lateOrigin }.filter { $0 < pause - 1e-6 }
        let last = try #require(before.max())
        #expect(pause - last <= 0.040 + 1e-3, "the late camera's last frame before the pause at \(pause) s is at \(last) s")
    }
}

/// A microphone that hands its audio over later than a pause lasts: audio
/// captured before the pause reaches the writer after the resume. The
/// writer puts it in the stretch it was captured in, and the recording
/// counts it there: the file holds the audio samples reported.
@Suite struct LateAudioAtPauseTests {
    /// 48 kHz stereo in 20 ms buffers stamped on the clock, each handed over `delay` after its stamp.
    final class LateMicrophone: CaptureSource, @unchecked Sendable {
        // @unchecked: every stored property is a constant.
        let mediaType = MediaType.audio
        let path = "late-microphone"
        let localizedName = "Late microphone"
        let modelID: String? = nil
        let videoFormat: CaptureVideoFormat? = nil
        let droppedByDevice = 0
        let audioFormat: CaptureAudioFormat? = CaptureAudioFormat(sampleFormat: .s16, sampleRate: 48000, channels: 2)
        let delay: Int64 = 700_000_000

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            let start = MonotonicClock.nowNanoseconds()
            var index = 0
            while true {
                let stamp = start + Int64(index) * 20_000_000
                if stop.wait(untilNanoseconds: stamp + delay) { return .stopped }
                let samples = Tone.samples(count: 960, channels: 2, rate: 48000, start: index * 960)
                let storage = samples.withUnsafeBytes { SampleStorage(copying: $0) }
                deliver(.audio(AudioSampleBuffer(storage: storage, format: .s16, channels: 2, sampleRate: 48000, frameCount: 960,
                                                 presentationTime: MediaTime(value: stamp, timescale: MonotonicClock.timescale))))
                index += 1
            }
        }
    }

    @Test(arguments: ["late.mkv", "late.mp4"])
    func audioBeforeThePauseThatComesAfterTheResumeIsCounted(name: String) throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: SessionLifecycleTests.TickingCamera()))
        session.addInput(CaptureInput(source: LateMicrophone()))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }

        let recorder = SessionLifecycleTests.Recorder()
        let path = scratch.file(name)
        output.startRecording(to: path, recordingDelegate: recorder)
        #expect(eventually { output.statistics.audioSamples >= 24000 })
        output.pauseRecording()
        #expect(eventually { output.statistics.isPaused })
        // Shorter than the microphone's delay: its audio from before the pause is still to come.
        usleep(300_000)
        output.resumeRecording()
        #expect(eventually { !output.statistics.isPaused })
        let frames = output.statistics.videoFrames
        #expect(eventually { output.statistics.videoFrames >= frames + 50 })
        output.stopRecording()
        #expect(recorder.waitForEnd())
        #expect(recorder.error == nil)

        let file = try #require(recorder.files.first)
        let object = try FFprobe.json(["-select_streams", "a:0", "-show_entries", "frame=nb_samples", path])
        let decoded = (object["frames"] as? [[String: Any]] ?? []).reduce(0) { $0 + (Int($1["nb_samples"] as? String ?? "") ?? ($1["nb_samples"] as? Int ?? 0)) }
        // Within one codec frame (what a container without a way to trim the last one leaves).
        #expect(abs(decoded - file.audioSamples) < 1024, "\(decoded) audio samples in the file, \(file.audioSamples) reported")
    }
}

/// A camera that stops delivering while the recording is paused: a resume
/// waits for its next frame only as long as one can be expected, then takes
/// effect by the clock, so the recording does not stay paused for good.
@Suite struct ResumeWhileStalledTests {
    @Test func aResumeWhileTheCameraIsStalledTakesEffect() throws {
        let scratch = try WriterScratchDirectory()
        let camera = LateFrameAtPauseTests.LateCamera(delay: 0)
        let session = CaptureSession()
        session.addInput(CaptureInput(source: camera))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }

        let recorder = SessionLifecycleTests.Recorder()
        output.startRecording(to: scratch.file("stalled.mp4"), recordingDelegate: recorder)
        #expect(eventually { output.statistics.videoFrames >= 10 })
        output.pauseRecording()
        #expect(eventually { output.statistics.isPaused })
        camera.stalled.store(true, ordering: .relaxed)
        usleep(200_000)
        let asked = Date()
        output.resumeRecording()
        #expect(eventually { !output.statistics.isPaused })
        let waited = Date().timeIntervalSince(asked)
        // Not before a frame could still have come (a second), not much after.
        #expect(waited >= 0.5 && waited < 3, "resumed after \(waited) s")
        output.stopRecording()
        #expect(recorder.waitForEnd())
        #expect(recorder.error == nil)
    }
}
