import Foundation
import Testing
@testable import CaptureKit

/// The session in AVFoundation's order: it runs on its own, and file
/// outputs start, stop and start again on it while the camera stays open;
/// outputs come and go while it runs; a lost device finishes every file
/// recording from it.
@Suite struct SessionLifecycleTests {
    /// A live camera: a small gray frame every 20 ms until stopped, or until
    /// `vanish()` makes it go away as an unplugged camera does.
    final class TickingCamera: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.video
        let path = "ticking"
        let localizedName = "Ticking camera"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        private let lock = NSLock()
        private var opens = 0
        private var gone = false
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: .raw(.gray8, bytesPerRow: nil), width: 64, height: 48,
                               frameDuration: MediaTime(value: 1, timescale: 50), fourcc: "GREY")
        }

        var openCount: Int { lock.lock(); defer { lock.unlock() }; return opens }
        func vanish() { lock.lock(); gone = true; lock.unlock() }
        private var isGone: Bool { lock.lock(); defer { lock.unlock() }; return gone }

        func open() throws(CaptureError) { lock.lock(); opens += 1; lock.unlock() }
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            var number = 0
            var next = MonotonicClock.nowNanoseconds()
            while true {
                if stop.wait(untilNanoseconds: next) { return .stopped }
                if isGone { return .deviceLost(path) }
                deliver(SessionLifecycleTests.grayFrame(number, shade: 7, at: next))
                number += 1
                next += 20_000_000
            }
        }
    }

    /// A 64x48 gray frame, its shade `number * shade`, stamped at `nanoseconds` on the capture clock.
    static func grayFrame(_ number: Int, shade: Int, at nanoseconds: Int64) -> SampleBuffer {
        let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: number * shade), count: 64 * 48)
        return .video(VideoSampleBuffer(storage: bytes.withUnsafeBytes { SampleStorage(copying: $0) },
                                        layout: .raw(.gray8, bytesPerRow: nil), width: 64, height: 48,
                                        presentationTime: MediaTime(value: nanoseconds, timescale: MonotonicClock.timescale),
                                        duration: nil, sequence: UInt64(number)))
    }

    final class Recorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        private let condition = NSCondition()
        private(set) var files: [RecordedFile] = []
        private(set) var reason: RecordingStopReason?
        private(set) var error: RecordingError?

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            condition.lock()
            files.append(file)
            condition.unlock()
        }

        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            condition.lock()
            self.reason = reason
            self.error = error
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

    /// Waits (up to 10 s) until `output` has written at least `frames` frames.
    func waitForFrames(_ output: CaptureFileOutput, _ frames: Int) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while output.statistics.videoFrames < frames {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        return true
    }

    /// Frames in a file as ffmpeg decodes them.
    func decodedFrames(_ path: String) throws -> Int {
        try FFprobe.frames(path).count
    }

    /// Records `frames` frames or more to `path` on a running session and stops.
    func recordClip(_ output: CaptureFileOutput, to path: String, frames: Int) throws -> Recorder {
        let recorder = Recorder()
        output.startRecording(to: path, recordingDelegate: recorder)
        #expect(output.isRecording)
        #expect(waitForFrames(output, frames))
        output.stopRecording()
        #expect(recorder.waitForEnd())
        #expect(!output.isRecording)
        return recorder
    }

    @Test func recordingStartsAfterTheSessionRunsAndAgainAfterAStop() throws {
        let scratch = try WriterScratchDirectory()
        let camera = TickingCamera()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: camera))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(!output.isRecording)

        var clips: [(path: String, recorder: Recorder)] = []
        for number in 1...3 {
            let path = scratch.file("clip-\(number).mp4")
            clips.append((path, try recordClip(output, to: path, frames: 10)))
        }
        // One camera open for the three recordings: the session kept it.
        #expect(camera.openCount == 1)
        #expect(session.isRunning)
        for (path, recorder) in clips {
            #expect(recorder.reason == .stopped)
            #expect(recorder.error == nil)
            let file = try #require(recorder.files.first)
            #expect(file.path == path)
            #expect(file.isComplete)
            #expect(file.videoFrames >= 10)
            #expect(try decodedFrames(path) == file.videoFrames, "\(path)")
        }
    }

    @Test func anOutputAddedWhileRunningRecords() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TickingCamera()))
        try session.startRunning()
        defer { session.stopRunning() }
        usleep(100_000)
        let output = MovieFileOutput()
        #expect(session.canAddOutput(output))
        session.addOutput(output)
        #expect(session.outputs.contains { $0 === output })
        let path = scratch.file("late.mp4")
        let recorder = try recordClip(output, to: path, frames: 10)
        let file = try #require(recorder.files.first)
        #expect(file.isComplete)
        #expect(try decodedFrames(path) == file.videoFrames)

        // Removed while recording: its file is finished.
        let second = Recorder()
        output.startRecording(to: scratch.file("removed.mp4"), recordingDelegate: second)
        #expect(waitForFrames(output, 5))
        session.removeOutput(output)
        #expect(second.waitForEnd())
        #expect(second.files.first?.isComplete == true)
        #expect(!session.outputs.contains { $0 === output })
    }

    /// Two outputs on one session, each with its own limit: each file ends at its own.
    @Test func twoOutputsWithDifferentLimits() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TickingCamera()))
        let short = MovieFileOutput(), long = MovieFileOutput()
        short.maxRecordedDuration = MediaTime(value: 1, timescale: 2)
        long.maxRecordedDuration = MediaTime(value: 1, timescale: 1)
        session.addOutput(short)
        session.addOutput(long)
        try session.startRunning()
        defer { session.stopRunning() }
        let shortRecorder = Recorder(), longRecorder = Recorder()
        short.startRecording(to: scratch.file("short.mp4"), recordingDelegate: shortRecorder)
        long.startRecording(to: scratch.file("long.mp4"), recordingDelegate: longRecorder)
        #expect(shortRecorder.waitForEnd())
        #expect(longRecorder.waitForEnd())

        for (recorder, seconds) in [(shortRecorder, 0.5), (longRecorder, 1.0)] {
            #expect(recorder.reason == .maxDuration)
            let file = try #require(recorder.files.first)
            #expect(abs(file.duration.seconds - seconds) < 0.001, "\(file.path): \(file.duration.seconds) s")
            let probed = try #require(FFprobe.streams(file.path).first)
            let duration = (probed["duration"] as? String).flatMap(Double.init) ?? 0
            #expect(abs(duration - seconds) <= 0.021, "\(file.path) lasts \(duration) s")
            #expect(try decodedFrames(file.path) == file.videoFrames)
        }
        // The short one stopping left the other recording, and the camera running.
        #expect(session.isRunning)
    }

    /// A camera lost while two outputs record from it: both files are
    /// finished with the reason, and observers hear the disconnection.
    @Test func aLostDeviceFinishesEveryFileRecordingFromIt() throws {
        let scratch = try WriterScratchDirectory()
        let camera = TickingCamera()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: camera))
        let first = MovieFileOutput(), second = MovieFileOutput()
        session.addOutput(first)
        session.addOutput(second)
        let heard = NSCondition()
        // nonisolated(unsafe): read and written only while holding `heard`.
        nonisolated(unsafe) var disconnected: [String] = []
        session.addObserver { notification in
            guard case .deviceWasDisconnected(let device) = notification else { return }
            heard.lock()
            disconnected.append(device)
            heard.broadcast()
            heard.unlock()
        }
        try session.startRunning()
        defer { session.stopRunning() }
        let firstRecorder = Recorder(), secondRecorder = Recorder()
        first.startRecording(to: scratch.file("first.mp4"), recordingDelegate: firstRecorder)
        second.startRecording(to: scratch.file("second.mkv"), recordingDelegate: secondRecorder)
        #expect(waitForFrames(first, 10) && waitForFrames(second, 10))
        camera.vanish()
        #expect(firstRecorder.waitForEnd())
        #expect(secondRecorder.waitForEnd())
        for recorder in [firstRecorder, secondRecorder] {
            #expect(recorder.reason == .deviceDisconnected)
            #expect(recorder.error == .deviceLost("ticking"))
            let file = try #require(recorder.files.first)
            #expect(file.isComplete)
            #expect(try decodedFrames(file.path) == file.videoFrames, "\(file.path)")
        }
        heard.lock()
        let deadline = Date(timeIntervalSinceNow: 5)
        while disconnected.isEmpty && heard.wait(until: deadline) {}
        #expect(disconnected == ["ticking"])
        heard.unlock()
    }

    /// The session preset sizes a camera whose device has no format chosen;
    /// a format chosen on the device wins, as in AVFoundation.
    @Test func theSessionPresetChoosesTheSizeUnlessTheDeviceHasAFormat() throws {
        let device = try #require(CaptureDevice(uniqueID: "virtual:test-pattern"))
        let session = CaptureSession()
        let input = try CaptureDeviceInput(device: device)
        session.addInput(input)
        #expect(session.canSetSessionPreset(.hd1280x720))
        for (preset, width, height) in [(SessionPreset.low, 320, 240), (.hd1280x720, 1280, 720), (.vga640x480, 640, 480)] {
            session.sessionPreset = preset
            try session.startRunning()
            let format = try #require(input.source.videoFormat)
            #expect(format.width == width && format.height == height, "\(preset): \(format.width)x\(format.height)")
            session.stopRunning()
        }
        // Chosen on the device, under its configuration lock: that format, whatever the preset.
        let fourcc = try #require(try device.videoFormats().first?.fourcc)
        try device.lockForConfiguration()
        device.activeFormat = ActiveVideoFormat(fourcc: fourcc, dimensions: FrameDimensions(width: 1920, height: 1080))
        device.unlockForConfiguration()
        session.sessionPreset = .low
        try session.startRunning()
        #expect(input.source.videoFormat?.width == 1920)
        session.stopRunning()
    }

    /// While a segment's file is finished, the totals count its frames once.
    @Test func aFinishedFileCountsOnceInTheTotals() throws {
        final class Watcher: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
            let recorder = Recorder()
            private let lock = NSLock()
            private(set) var seen: [(fileFrames: Int, totalFrames: Int, earlierFrames: Int)] = []
            private var earlier = 0
            func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
                lock.lock()
                seen.append((file.videoFrames, output.statistics.videoFrames, earlier))
                earlier += file.videoFrames
                lock.unlock()
                recorder.fileOutput(output, didFinishRecordingTo: file, error: error)
            }
            func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
                recorder.fileOutput(output, didEndRecordingWith: reason, error: error)
            }
        }
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TickingCamera()))
        let output = MovieFileOutput()
        output.segmentDuration = MediaTime(value: 1, timescale: 2)
        output.maxRecordingDuration = MediaTime(value: 3, timescale: 2)
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        let watcher = Watcher()
        output.startRecording(toTemplate: try FileNameTemplate(scratch.file("part-%n.mp4")), recordingDelegate: watcher)
        #expect(watcher.recorder.waitForEnd())
        #expect(watcher.seen.count == 3)
        for (fileFrames, total, earlier) in watcher.seen {
            // This file and those before it, and at most the few frames the next one has so far: never this file twice.
            #expect(total >= earlier + fileFrames && total < earlier + fileFrames + 10, "\(total) frames counted for \(earlier) + \(fileFrames)")
        }
    }
}
