import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// CaptureRecorder: a whole recording on a session, its refusals, its
/// pause causes, its ends, and several of them on one running session.
@Suite struct CaptureRecorderTests {
    /// Everything the recorder's delegate heard, in order.
    final class Heard: CaptureRecorderDelegate {
        private let heard = Mutex<[String]>([])
        private let finishedFiles = Mutex<[RecordedFile]>([])
        private let ends = Mutex<[CaptureRecorderEnd]>([])

        var events: [String] { heard.withLock { $0 } }
        var files: [RecordedFile] { finishedFiles.withLock { $0 } }
        var endings: [CaptureRecorderEnd] { ends.withLock { $0 } }

        func recorder(_ recorder: CaptureRecorder, didPauseRecordingTo path: String, cause: RecordingPauseCause) {
            heard.withLock { $0.append("paused \(cause.rawValue)") }
        }

        func recorder(_ recorder: CaptureRecorder, didResumeRecordingTo path: String, cause: RecordingPauseCause) {
            heard.withLock { $0.append("resumed \(cause.rawValue)") }
        }

        func recorder(_ recorder: CaptureRecorder, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            finishedFiles.withLock { $0.append(file) }
        }

        func recorder(_ recorder: CaptureRecorder, didEndWith end: CaptureRecorderEnd) {
            ends.withLock { $0.append(end) }
        }
    }

    static let half = MediaTime(value: 1, timescale: 2)

    static func session(cameras: Int = 1, tone: Bool = false) throws -> CaptureSession {
        let session = CaptureSession()
        for _ in 0..<cameras { session.addInput(try CaptureInput(camera: "test-pattern", request: CaptureVideoRequest(width: 160, height: 120))) }
        if tone { session.addInput(try CaptureInput(microphone: "test-tone")) }
        return session
    }

    @Test func aRecordingToItsLimitEndsWithTheLimitAndTheFileItWrote() throws {
        let scratch = try WriterScratchDirectory()
        var configuration = CaptureRecorderConfiguration(destination: scratch.file("limit.mp4"))
        configuration.maxDuration = Self.half
        let heard = Heard()
        let recorder = try CaptureRecorder(configuration, delegate: heard)
        let session = try Self.session(tone: true)
        try recorder.start(on: session)
        #expect(recorder.waitUntilEnded(timeout: 20))
        let end = recorder.finish()
        session.stopRunning()
        #expect(end.reason == .maxDuration)
        #expect(end.error == .limitReached(.maxDuration))
        #expect(end.error?.recordingSuccessfullyFinished == true)
        #expect(end.statistics.files == [scratch.file("limit.mp4")])
        #expect(abs(end.statistics.duration.seconds - 0.5) < 0.001)
        #expect(end.statistics.videoFrames == 15)
        #expect(heard.endings.map(\.reason) == [.maxDuration])
        #expect(heard.files.map(\.videoFrames) == [15])
        // The file's make is the camera's name.
        let camera = try #require(session.inputs.first { $0.mediaType == .video })
        #expect(recorder.fileOutput?.settings.metadata.first == .make(camera.source.localizedName))
    }

    @Test func anArmedRecordingSaysWhyItPausedAndResumed() throws {
        let scratch = try WriterScratchDirectory()
        var configuration = CaptureRecorderConfiguration(destination: scratch.file("armed.mp4"))
        configuration.startsPaused = true
        configuration.preRoll = Self.half
        let heard = Heard()
        let recorder = try CaptureRecorder(configuration, delegate: heard)
        let session = try Self.session()
        try recorder.start(on: session)
        #expect(eventually { heard.events == ["paused armed"] })
        // Nothing is made while armed.
        #expect(!FileManager.default.fileExists(atPath: scratch.file("armed.mp4")))
        Thread.sleep(forTimeInterval: 0.8)
        recorder.resume()
        #expect(eventually { heard.events == ["paused armed", "resumed requested"] })
        recorder.pause()
        #expect(eventually { heard.events.count == 3 })
        recorder.stop()
        #expect(recorder.waitUntilEnded(timeout: 20))
        let end = recorder.finish()
        session.stopRunning()
        #expect(heard.events == ["paused armed", "resumed requested", "paused requested"])
        #expect(end.reason == .stopped)
        // The pre-roll was written first: the file holds about half a second before the resume.
        #expect(end.statistics.lastPreRoll.seconds >= 0.4, "\(end.statistics.lastPreRoll.seconds)")
    }

    @Test(arguments: [0, 1, 2, 3])
    func switchesAskedForBeforeAnyMediaLetTheRecordingStop(switches: Int) throws {
        let scratch = try WriterScratchDirectory()
        let configuration = CaptureRecorderConfiguration(destination: scratch.file("early-%n.mp4"))
        let heard = Heard()
        let recorder = try CaptureRecorder(configuration, delegate: heard)
        let session = try Self.session(tone: true)
        try recorder.start(on: session)
        // Before the first frame reaches the file, and before the previous switch took effect.
        for _ in 0..<switches { recorder.switchToNextFile() }
        usleep(400_000)
        recorder.switchToNextFile()
        usleep(400_000)
        recorder.stop()
        #expect(recorder.waitUntilEnded(timeout: 10), "the recording did not end after \(switches) early switches")
        let end = recorder.finish()
        session.stopRunning()
        #expect(end.reason == .stopped)
        #expect(end.error == nil || end.error?.recordingSuccessfullyFinished == true, "\(String(describing: end.error))")
        // Every file the recording reports holds media, and each is a file on disk.
        let files = heard.files
        #expect(files.count >= 2)
        for file in files {
            #expect(file.videoFrames > 0, "\(file.path) reported without a frame")
            #expect(FileManager.default.fileExists(atPath: file.path))
        }
        #expect(files.map(\.videoFrames).reduce(0, +) == end.statistics.videoFrames)
    }

    @Test func theDestinationIsCheckedBeforeAnyDeviceOpens() throws {
        let scratch = try WriterScratchDirectory()
        try Data("precious".utf8).write(to: URL(fileURLWithPath: scratch.file("taken.mp4")))
        try FileManager.default.createDirectory(atPath: scratch.file("folder.mp4"), withIntermediateDirectories: false)
        let cases: [(String, Bool, RecordingError)] = [
            (scratch.file("taken.mp4"), false, .outputExists(path: scratch.file("taken.mp4"))),
            (scratch.file("folder.mp4"), true, .cannotCreate(path: scratch.file("folder.mp4"), reason: "is a directory")),
            (scratch.file("missing/out.mp4"), false,
             .cannotCreate(path: scratch.file("missing/out.mp4"), reason: "the directory \(scratch.file("missing")) does not exist")),
        ]
        for (path, overwrites, expected) in cases {
            var configuration = CaptureRecorderConfiguration(destination: path)
            configuration.overwritesExistingFiles = overwrites
            #expect(throws: expected) { try CaptureRecorder(configuration).checkDestination() }
        }
        // A template naming no container, or segments in one file, are refused as the recorder is made.
        #expect(throws: RecordingError.unsupported("cannot tell the container from 'out.avi'")) {
            try CaptureRecorder(CaptureRecorderConfiguration(destination: "out.avi"))
        }
        var segmented = CaptureRecorderConfiguration(destination: scratch.file("one.mp4"))
        segmented.segmentDuration = Self.half
        #expect(throws: RecordingError.self) { try CaptureRecorder(segmented) }
    }

    @Test func videoToAnAudioFileAndMotionWithoutACameraAreRefused() throws {
        let scratch = try WriterScratchDirectory()
        let recorder = try CaptureRecorder(CaptureRecorderConfiguration(destination: scratch.file("sound.wav")))
        let session = try Self.session()
        #expect(throws: CaptureRecorderError.self) { try recorder.start(on: session) }
        #expect(!session.isRunning)

        var motion = CaptureRecorderConfiguration(destination: scratch.file("motion.wav"))
        motion.motion = MotionDetector.Configuration()
        let audioOnly = CaptureSession()
        audioOnly.addInput(try CaptureInput(microphone: "test-tone"))
        do {
            try CaptureRecorder(motion).start(on: audioOnly)
            Issue.record("a motion trigger without a camera started")
        } catch let error as CaptureRecorderError {
            guard case .recording(.motionNeedsCamera) = error else { Issue.record("\(error)"); return }
        }
        #expect(!audioOnly.isRunning)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("motion.wav")))
    }

    /// Two recordings with their own files and limits on one running
    /// session: each ends by itself, its outputs leave the session, and the
    /// session runs on.
    @Test func twoRecordersShareOneRunningSession() throws {
        let scratch = try WriterScratchDirectory()
        let session = try Self.session()
        try session.startRunning()
        defer { session.stopRunning() }
        var short = CaptureRecorderConfiguration(destination: scratch.file("short.mp4"))
        short.maxDuration = Self.half
        var long = CaptureRecorderConfiguration(destination: scratch.file("long.mkv"))
        long.maxDuration = MediaTime(value: 1, timescale: 1)
        let first = try CaptureRecorder(short), second = try CaptureRecorder(long)
        try first.start(on: session)
        try second.start(on: session)
        #expect(session.outputs.count == 2)
        #expect(first.waitUntilEnded(timeout: 20) && second.waitUntilEnded(timeout: 20))
        let ends = [first.finish(), second.finish()]
        #expect(ends.map(\.reason) == [.maxDuration, .maxDuration])
        #expect(ends.map(\.statistics.videoFrames) == [15, 30])
        #expect(session.outputs.isEmpty)
        #expect(session.isRunning)
    }

    /// Without a file the streams are the recording: it ends when they do.
    @Test func aRecordingOfStreamsAloneEndsWithThem() throws {
        let port = 20_000 + Int(getpid() % 10_000)
        var configuration = CaptureRecorderConfiguration(destination: nil)
        configuration.maxDuration = Self.half
        var settings = RecordingSettings()
        settings.video = .encode(.h264)
        configuration.streams = [CaptureRecorderStream(destination: try StreamDestination("udp://127.0.0.1:\(port)"), settings: settings)]
        let heard = Heard()
        let recorder = try CaptureRecorder(configuration, delegate: heard)
        let session = try Self.session()
        try recorder.start(on: session)
        #expect(recorder.waitUntilEnded(timeout: 20))
        session.stopRunning()
        let end = recorder.finish()
        #expect(end.reason == .maxDuration)
        #expect(recorder.files.isEmpty)
        let sent = try #require(recorder.progress.streams.first?.statistics)
        #expect(sent.bytesSent > 0)
        #expect(abs(sent.durationSent.seconds - 0.5) < 0.05, "\(sent.durationSent.seconds)")
        #expect(heard.endings.count == 1)
    }

    /// One camera given twice is refused by the session before it opens either.
    @Test func theSameCameraTwiceIsRefusedBeforeAnyOpens() throws {
        let camera = try FakeV4L2Camera()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: V4L2CaptureSource(device: camera.device())))
        session.addInput(CaptureInput(source: V4L2CaptureSource(device: camera.device())))
        let id = camera.device().uniqueID
        #expect(throws: CaptureError.sameCameraTwice("/dev/fake-video0", uniqueID: id)) { try session.startRunning() }
        #expect(camera.openHandles == 0)
        #expect(!session.isRunning)
    }

    /// Calls to start recording from several threads at once make one
    /// recording: the others see it under way, and none is left orphaned
    /// (each recording that began reaches its end).
    @Test func concurrentStartsMakeOneRecording() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try RecordingDelegateContractTests.runningSession()
        defer { session.stopRunning() }
        for round in 1...5 {
            let heard = RecordingDelegateContractTests.Heard()
            let template = try FileNameTemplate(scratch.file("round\(round)-%n.mp4"))
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                output.startRecording(toTemplate: template, recordingDelegate: heard)
            }
            Thread.sleep(forTimeInterval: 0.2)
            output.stopRecording()
            #expect(heard.wait(files: 1, endings: 1))
            Thread.sleep(forTimeInterval: 0.3)
            #expect(heard.endings.count == 1, "round \(round): \(heard.endings.count) recordings ended")
            #expect(heard.files.count == 1, "round \(round): \(heard.files.map(\.file.path))")
            output.waitUntilFinished()
        }
    }

    /// A recorder never started, or stopped before it started (an interrupt
    /// while the devices open), ends without waiting for anything.
    @Test func aStopBeforeTheStartEndsTheRecordingAtOnce() throws {
        let scratch = try WriterScratchDirectory()
        let unstarted = try CaptureRecorder(CaptureRecorderConfiguration(destination: scratch.file("never.mp4")))
        #expect(unstarted.finish().reason == .stopped)

        let recorder = try CaptureRecorder(CaptureRecorderConfiguration(destination: scratch.file("stopped.mp4")))
        recorder.stop()
        let session = try Self.session()
        try recorder.start(on: session)
        #expect(recorder.waitUntilEnded(timeout: 20))
        let end = recorder.finish()
        session.stopRunning()
        #expect(end.reason == .stopped)
        #expect(end.statistics.videoFrames <= 1)
    }
}
