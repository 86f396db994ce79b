import Foundation
import Glibc
import Testing
@testable import CaptureKit

/// Several cameras in one session recorded by one MovieFileOutput: a track
/// per camera on the session's clock, a file per camera (`%c`) cut at one
/// time, a camera the bus cannot carry, and a camera lost mid-recording.
@Suite(.serialized) struct MultiCameraRecordingTests {
    final class Recorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        // @unchecked: every field is read and written under `condition`.
        private let condition = NSCondition()
        private var finished: [RecordedFile] = []
        private var lostInputs: [(CaptureInput, RecordingError)] = []
        private var endReason: RecordingStopReason?
        private var endError: RecordingError?

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            condition.lock(); finished.append(file); condition.broadcast(); condition.unlock()
        }

        func fileOutput(_ output: CaptureFileOutput, didLose input: CaptureInput, error: RecordingError) {
            condition.lock(); lostInputs.append((input, error)); condition.broadcast(); condition.unlock()
        }

        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            condition.lock(); endReason = reason; endError = error; condition.broadcast(); condition.unlock()
        }

        var files: [RecordedFile] { condition.lock(); defer { condition.unlock() }; return finished }
        var lost: [(CaptureInput, RecordingError)] { condition.lock(); defer { condition.unlock() }; return lostInputs }
        var reason: RecordingStopReason? { condition.lock(); defer { condition.unlock() }; return endReason }
        var error: RecordingError? { condition.lock(); defer { condition.unlock() }; return endError }

        /// Waits (at most 30 s, a bound for a hung test, not a timing) until `done` holds.
        func wait(until done: (Recorder) -> Bool) -> Bool {
            let deadline = Date(timeIntervalSinceNow: 30)
            while !done(self) {
                if Date() > deadline { return false }
                usleep(5_000)
            }
            return true
        }
    }

    /// The capture time of every sample the writing thread saw, by input position.
    final class SeenTimes: @unchecked Sendable {
        // @unchecked: `times` is guarded by `lock`.
        private let lock = NSLock()
        private var times: [ObjectIdentifier: [MediaTime]] = [:]
        func add(_ sample: SampleBuffer, _ input: CaptureInput) {
            lock.lock(); times[ObjectIdentifier(input), default: []].append(sample.presentationTime); lock.unlock()
        }
        func of(_ input: CaptureInput) -> [MediaTime] { lock.lock(); defer { lock.unlock() }; return times[ObjectIdentifier(input)] ?? [] }
    }

    static func camera(_ width: Int, _ height: Int, fps: Double) -> CaptureInput {
        CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: width, height: height, framesPerSecond: fps)))
    }

    /// An input per fake camera, on /dev/fake-video0, /dev/fake-video1 … in order.
    static func inputs(of cameras: [FakeV4L2Camera]) throws -> [CaptureDeviceInput] {
        try cameras.enumerated().map { number, camera in
            let input = try CaptureDeviceInput(device: camera.device(path: "/dev/fake-video\(number)"))
            input.locksConfiguration = false
            return input
        }
    }

    /// A session of `inputs` and `output`, not yet running.
    static func session(of inputs: [CaptureInput], output: MovieFileOutput) -> CaptureSession {
        let session = CaptureSession()
        for input in inputs { session.addInput(input) }
        session.addOutput(output)
        return session
    }

    /// Records `inputs` with `output` to `template` on a session of their
    /// own until the recording ends by itself (a limit); the session stops.
    static func recordUntilItEnds(_ inputs: [CaptureInput], with output: MovieFileOutput, toTemplate template: String) throws -> Recorder {
        let session = Self.session(of: inputs, output: output)
        let recorder = Recorder()
        output.startRecording(toTemplate: try FileNameTemplate(template), recordingDelegate: recorder)
        try session.startRunning()
        defer { session.stopRunning() }
        try #require(recorder.wait { $0.reason != nil })
        return recorder
    }

    /// Two test patterns of different sizes and rates and a tone, 2 s: each
    /// camera's track holds exactly the frames captured in those 2 s, its
    /// first one shown at its capture time after the file's start (the
    /// earliest first frame), and the audio lasts the 2 s.
    @Test(arguments: ["mp4", "mov", "mkv"])
    func twoCamerasAndAToneShareOneTimeline(container: String) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("two.\(container)")
        let cameras = [Self.camera(320, 240, fps: 30), Self.camera(160, 120, fps: 15)]
        let tone = CaptureInput(source: TestToneSource())
        let seen = SeenTimes()
        let output = MovieFileOutput()
        output.maxRecordedDuration = MediaTime(value: 2, timescale: 1)
        output.sampleHandler = { sample, input in if sample.mediaType == .video { seen.add(sample, input) } }
        let session = CaptureSession()
        for input in cameras + [tone] { session.addInput(input) }
        session.addOutput(output)
        let recorder = Recorder()
        output.startRecording(to: path, recordingDelegate: recorder)
        try session.startRunning()
        defer { session.stopRunning() }
        try #require(recorder.wait { $0.reason != nil })
        #expect(recorder.reason == .maxDuration)

        let firsts = cameras.map { seen.of($0).first }
        let start = try #require(firsts.compactMap { $0 }.min())
        let end = start + MediaTime(value: 2, timescale: 1)
        let info = try MediaInfo.read(path: path)
        let videoTracks = info.tracks.filter { $0.mediaType == "video" }
        try #require(videoTracks.count == 2)
        // The file's time zero: where the first frame of the camera that
        // started first is shown (Matroska moves every track by the audio
        // encoder's priming; MP4 and QuickTime edit it out).
        let earliest = try #require(firsts.firstIndex(of: start))
        let zero = try #require(try FFprobe.frames(path, stream: "v:\(earliest)").first?.time)
        if container != "mkv" { #expect(zero == 0) }
        for (number, camera) in cameras.enumerated() {
            let inWindow = seen.of(camera).filter { $0 >= start && $0 < end }
            let frames = try FFprobe.frames(path, stream: "v:\(number)")
            #expect(frames.count == inWindow.count, "camera \(number + 1): \(frames.count) frames in the file, \(inWindow.count) captured")
            #expect(videoTracks[number].frameCount == inWindow.count)
            let offset = (try #require(inWindow.first) - start).seconds
            let shown = try #require(frames.first?.time) - zero
            #expect(abs(shown - offset) <= 0.0015, "camera \(number + 1): first frame at \(shown) s, captured \(offset) s after the start")
            #expect(videoTracks[number].title == "Test pattern (test-pattern)")
        }
        #expect(videoTracks.map(\.width) == [320, 160])
        let audio = try #require(info.tracks.first { $0.mediaType == "audio" })
        #expect(abs((audio.duration?.seconds ?? 0) - 2) <= 0.03, "audio lasts \(audio.duration?.seconds ?? 0) s")
        #expect(output.statistics.videoFrames == videoTracks.compactMap(\.frameCount).reduce(0, +))
    }

    /// `%c`: a camera that sends no frame during a segment (1 fps against
    /// 0.4 s segments) leaves that segment's file of it without a picture,
    /// which is no failure: the recording runs to its limit, and every file
    /// holds the frames it reports.
    @Test func aCameraWithoutAFrameInASegmentIsNoFailure() throws {
        let scratch = try WriterScratchDirectory()
        let cameras = [Self.camera(320, 240, fps: 30), Self.camera(160, 120, fps: 1)]
        let output = MovieFileOutput()
        output.maxRecordingDuration = MediaTime(value: 2, timescale: 1)
        output.segmentDuration = MediaTime(value: 2, timescale: 5)
        let recorder = try Self.recordUntilItEnds(cameras, with: output, toTemplate: scratch.file("cam%c-%n.mp4"))
        #expect(recorder.reason == .maxDuration)
        #expect(recorder.error?.recordingSuccessfullyFinished ?? true, "\(String(describing: recorder.error))")
        let incomplete = recorder.files.filter { !$0.isComplete }.map { "\(($0.path as NSString).lastPathComponent) (\($0.videoFrames) frames)" }
        #expect(incomplete.isEmpty, "files not complete: \(incomplete)")
        let slow = recorder.files.filter { ($0.path as NSString).lastPathComponent.hasPrefix("cam2-") }
        #expect(slow.contains { $0.videoFrames == 0 }, "every segment had a frame of the 1 fps camera: \(slow.map(\.videoFrames))")
        for file in recorder.files where FileManager.default.fileExists(atPath: file.path) {
            #expect(file.videoFrames == (try FFprobe.frames(file.path).count), "\(file.path)")
        }
    }

    /// `%c`: each camera's file names its own camera as its make and model.
    @Test func eachCamerasFileNamesItsCamera() throws {
        let scratch = try WriterScratchDirectory()
        let cameras = [Self.camera(320, 240, fps: 30), CaptureInput(source: SessionLifecycleTests.TickingCamera())]
        let output = MovieFileOutput()
        output.maxRecordedDuration = MediaTime(value: 1, timescale: 1)
        _ = try Self.recordUntilItEnds(cameras, with: output, toTemplate: scratch.file("cam%c.mp4"))
        for (number, input) in cameras.enumerated() {
            let tags = try FFprobe.format(scratch.file("cam\(number + 1).mp4"))["tags"] as? [String: String] ?? [:]
            #expect(tags["make"] == input.source.localizedName, "cam\(number + 1).mp4: \(tags)")
            #expect(tags["model"] == input.source.modelID ?? input.source.localizedName, "cam\(number + 1).mp4: \(tags)")
        }
    }

    /// `%c`: a file per camera, each with the tone, cut into segments at the
    /// same media time: the files of one segment last the same.
    @Test func aFilePerCameraIsCutAtTheSameTime() throws {
        let scratch = try WriterScratchDirectory()
        let cameras = [Self.camera(320, 240, fps: 30), Self.camera(160, 120, fps: 15)]
        let tone = CaptureInput(source: TestToneSource())
        let output = MovieFileOutput()
        output.maxRecordingDuration = MediaTime(value: 5, timescale: 2)
        output.segmentDuration = MediaTime(value: 1, timescale: 1)
        let recorder = try Self.recordUntilItEnds(cameras + [tone], with: output, toTemplate: scratch.file("cam%c-%n.mp4"))
        #expect(recorder.reason == .maxDuration)

        let names = recorder.files.map { ($0.path as NSString).lastPathComponent }
        #expect(names == ["cam1-1.mp4", "cam2-1.mp4", "cam1-2.mp4", "cam2-2.mp4", "cam1-3.mp4", "cam2-3.mp4"])
        for segment in 1...3 {
            let pair = try ["cam1-\(segment).mp4", "cam2-\(segment).mp4"].map { try MediaInfo.read(path: scratch.file($0)) }
            let wanted = segment == 3 ? 0.5 : 1.0
            for info in pair {
                #expect(abs(info.duration.seconds - wanted) <= 0.0015, "\(info.path) lasts \(info.duration.seconds) s")
                #expect(info.tracks.map(\.mediaType) == ["video", "audio"])
            }
            #expect(pair[0].duration == pair[1].duration)
            #expect(pair.map { $0.tracks[0].width } == [320, 160])
        }
        // Each file reports the frames in it, and the totals add them up.
        for file in recorder.files {
            #expect(file.videoFrames == (try FFprobe.frames(file.path).count))
        }
        #expect(output.statistics.videoFrames == recorder.files.map(\.videoFrames).reduce(0, +))
        #expect(output.statistics.audioSamples == recorder.files.map(\.audioSamples).reduce(0, +))
    }

    /// A camera the bus cannot carry beside the other (ENOSPC at
    /// VIDIOC_STREAMON) keeps the session from starting, named, before the
    /// recording's file is created; both cameras are let go of.
    @Test func aCameraWithoutBandwidthIsRefusedBeforeAnyFile() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("never.mp4")
        let first = try FakeV4L2Camera(script: FakeV4L2Camera.numberedFrames(4))
        let second = try FakeV4L2Camera(script: FakeV4L2Camera.numberedFrames(4))
        second.streamOnError = ENOSPC
        let inputs = try Self.inputs(of: [first, second])
        let output = MovieFileOutput()
        let session = Self.session(of: inputs, output: output)
        let recorder = Recorder()
        output.startRecording(to: path, recordingDelegate: recorder)
        #expect(throws: CaptureError.noBandwidth("/dev/fake-video1")) { try session.startRunning() }
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!session.isRunning)
        #expect(first.openHandles == 0 && second.openHandles == 0)
        #expect(first.mappedBuffers == 0 && second.mappedBuffers == 0)
    }

    /// Two fake cameras, the first vanishing after 20 frames: its track ends
    /// there and the second records on (the delegate hears which camera
    /// went); with `stopsOnDeviceLoss` the recording ends instead; with a
    /// file per camera, the lost camera's file is finished with its frames.
    @Test(arguments: [("movie", false), ("movie", true), ("per-camera", false)])
    func aLostCameraEndsItsTrackAndTheOtherGoesOn(layout: String, stopsOnLoss: Bool) throws {
        let scratch = try WriterScratchDirectory()
        let lost = try FakeV4L2Camera(script: [.pause] + FakeV4L2Camera.numberedFrames(20) + [.failDequeue(ENODEV)])
        let staying = try FakeV4L2Camera(script: [.pause] + FakeV4L2Camera.numberedFrames(20) + [.pause] + FakeV4L2Camera.numberedFrames(30, from: 20))
        let inputs = try Self.inputs(of: [lost, staying])
        let output = MovieFileOutput()
        output.stopsOnDeviceLoss = stopsOnLoss
        let session = Self.session(of: inputs, output: output)
        let recorder = Recorder()
        if layout == "movie" {
            output.startRecording(to: scratch.file("two.mp4"), recordingDelegate: recorder)
        } else {
            output.startRecording(toTemplate: try FileNameTemplate(scratch.file("cam%c.mp4")), recordingDelegate: recorder)
        }
        try session.startRunning()
        defer { session.stopRunning() }
        // The camera that streamed first (its frames stamped earlier)
        // delivers first, as cameras do: the file starts at its first frame.
        lost.resume()
        try #require(recorder.wait { _ in lost.dequeuedBuffers >= 2 })
        staying.resume()
        if stopsOnLoss {
            try #require(recorder.wait { $0.reason != nil })
            #expect(recorder.reason == .deviceDisconnected)
            #expect(recorder.error == .deviceLost("/dev/fake-video0"))
            #expect(recorder.lost.isEmpty)
            return
        }
        try #require(recorder.wait { !$0.lost.isEmpty })
        #expect(recorder.lost.first?.0 === inputs[0])
        #expect(recorder.lost.first?.1 == .deviceLost("/dev/fake-video0"))
        #expect(output.isRecording)
        // The second camera goes on after the first is gone.
        staying.resume()
        #expect(staying.waitUntilScriptDone())
        try #require(recorder.wait { _ in output.statistics.videoFrames >= 70 },
                     "\(output.statistics.videoFrames) frames; files \(recorder.files); end \(String(describing: recorder.reason))")
        output.stopRecording()
        try #require(recorder.wait { $0.reason != nil })
        #expect(recorder.reason == .stopped)
        #expect(recorder.error == nil)

        if layout == "movie" {
            let path = scratch.file("two.mp4")
            #expect(recorder.files.map(\.path) == [path])
            #expect(try FFprobe.frames(path, stream: "v:0").count == 20)
            #expect(try FFprobe.frames(path, stream: "v:1").count == 50)
            #expect(recorder.files.first?.videoFrames == 70)
        } else {
            // The lost camera's file was finished first, with its 20 frames.
            #expect(recorder.files.map { ($0.path as NSString).lastPathComponent } == ["cam1.mp4", "cam2.mp4"])
            #expect(recorder.files.map(\.videoFrames) == [20, 50])
            #expect(try FFprobe.frames(scratch.file("cam1.mp4")).count == 20)
            #expect(try FFprobe.frames(scratch.file("cam2.mp4")).count == 50)
            #expect(recorder.files.allSatisfy { $0.isComplete })
        }
    }

    /// A camera lost beside one that keeps the queue full (frames as fast
    /// as they are drawn, more than the writer takes, as on a slow machine):
    /// with `stopsOnDeviceLoss` the recording stops once what was queued at
    /// the loss is written, although the queue never runs empty.
    @Test func aLossStopsTheRecordingWhileAnotherCameraKeepsTheQueueFull() throws {
        let scratch = try WriterScratchDirectory()
        let lost = try FakeV4L2Camera(script: [.pause] + FakeV4L2Camera.numberedFrames(20) + [.failDequeue(ENODEV)])
        let lostInput = try CaptureDeviceInput(device: lost.device(path: "/dev/fake-video0"))
        lostInput.locksConfiguration = false
        let flood = CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 640, height: 480, framesPerSecond: 30), realtime: false))
        let output = MovieFileOutput()
        output.stopsOnDeviceLoss = true
        let session = CaptureSession()
        session.addInput(lostInput)
        session.addInput(flood)
        session.addOutput(output)
        let recorder = Recorder()
        output.startRecording(to: scratch.file("two.mp4"), recordingDelegate: recorder)
        try session.startRunning()
        defer { session.stopRunning() }
        lost.resume()
        try #require(recorder.wait { $0.reason != nil }, "still recording: \(output.statistics.videoFrames) frames, \(output.statistics.dropped) dropped")
        #expect(recorder.reason == .deviceDisconnected)
        #expect(recorder.error == .deviceLost("/dev/fake-video0"))
        // What the file holds is what was reported (the full queue also
        // dropped some of the lost camera's frames, counted).
        let path = scratch.file("two.mp4")
        let file = try #require(recorder.files.first)
        #expect(try FFprobe.frames(path, stream: "v:0").count + FFprobe.frames(path, stream: "v:1").count == file.videoFrames)
    }

    /// v4l2loopback hands a new reader the buffer its writer left there, stamped
    /// when it was written: here 4 s before the recording. That frame is moved to
    /// the stream's start (and counted as a replaced stamp): every frame delivered
    /// is in the file, and no track starts seconds early. Before the guard, the
    /// frame was taken for one captured before the recording and dropped without
    /// a count (39 frames in the file, 0 dropped, where 40 were delivered).
    /// The other camera waits until the stale one has delivered its frames:
    /// otherwise, on a busy machine, three of its frames can start the file
    /// before the stale camera's first frame comes, and that frame, rightly
    /// from before the file's start, is left out of it.
    @Test func aStaleFirstBufferStartsNoTrackEarly() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("two.mp4")
        var staleScript = FakeV4L2Camera.numberedFrames(20)
        if case .frame(var first) = staleScript[0] {
            first.stampedAfterStreamOn = -4_000_000_000
            staleScript[0] = .frame(first)
        }
        let stale = try FakeV4L2Camera(script: staleScript)
        let fresh = try FakeV4L2Camera(script: [.pause] + FakeV4L2Camera.numberedFrames(20))
        let inputs = try Self.inputs(of: [stale, fresh])
        let output = MovieFileOutput()
        let session = Self.session(of: inputs, output: output)
        let recorder = Recorder()
        output.startRecording(to: path, recordingDelegate: recorder)
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(stale.waitUntilScriptDone())
        fresh.resume()
        #expect(fresh.waitUntilScriptDone())
        try #require(recorder.wait { _ in output.statistics.videoFrames + output.statistics.dropped >= 40 },
                     "\(output.statistics.videoFrames) frames, \(output.statistics.dropped) dropped")
        output.stopRecording()
        try #require(recorder.wait { $0.reason != nil })
        let file = try #require(recorder.files.first)
        let tracks = try [FFprobe.frames(path, stream: "v:0"), FFprobe.frames(path, stream: "v:1")]
        #expect(tracks[0].count + tracks[1].count == file.videoFrames)
        #expect(file.videoFrames == 40, "\(file.videoFrames) frames in the file, \(output.statistics.dropped) dropped")
        #expect((inputs[0].source as? V4L2CaptureSource)?.replacedTimestamps == 1)
        for track in tracks {
            let times = track.map(\.time)
            let span = (times.max() ?? 0) - (times.min() ?? 0)
            #expect(span < 1.5, "a track spans \(span) s")
        }
        let duration = try #require((FFprobe.format(path)["duration"] as? String).flatMap(Double.init))
        #expect(abs(duration - file.duration.seconds) < 0.1, "the file lasts \(duration) s, \(file.duration.seconds) s reported")
    }
}
