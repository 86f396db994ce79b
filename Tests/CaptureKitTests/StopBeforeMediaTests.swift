import Foundation
import Testing
@testable import CaptureKit

/// A recording stopped before any media reached its file (AVFoundation's
/// AVErrorNoDataCaptured): it ends as stopped, not as an error; its file
/// reaches `didFinishRecordingTo` once, not made, with `.noDataCaptured`;
/// nothing is left at the path.
@Suite struct StopBeforeMediaTests {
    typealias Heard = RecordingDelegateContractTests.Heard

    /// A recording of a test pattern camera at 0.1 fps (encoded to H.264 by
    /// the shared encoder), started once its first frame has come and
    /// stopped 50 ms later: ten seconds before its next frame.
    static func stopBetweenFrames(into path: String) throws -> Heard {
        let session = CaptureSession()
        let camera = TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120, framesPerSecond: 0.1))
        session.addInput(CaptureInput(source: camera))
        let frames = CaptureConnectionTests.Counter()
        let watcher = VideoDataOutput()
        watcher.setSampleBufferDelegate(frames, queue: nil)
        session.addOutput(watcher)
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        // The first frame is stamped as the session starts; the next comes ten seconds later.
        #expect(eventually { frames.count >= 1 })
        let heard = Heard()
        output.startRecording(to: path, recordingDelegate: heard)
        // The stop the test is about: 50 ms after the start, as a script's early stop comes.
        Thread.sleep(forTimeInterval: 0.05)
        output.stopRecording()
        #expect(heard.wait(files: 1, endings: 1))
        return heard
    }

    @Test func aStopBeforeTheFirstFrameLeavesNoFileAndNoError() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("early.mp4")
        let heard = try Self.stopBetweenFrames(into: path)
        let (file, error) = try #require(heard.files.first)
        #expect(error == .noDataCaptured(path: path))
        #expect(error?.recordingSuccessfullyFinished == false)
        #expect(!file.wasCreated)
        #expect(file.videoFrames == 0 && file.audioSamples == 0)
        let (reason, endError) = try #require(heard.endings.first)
        #expect(reason == .stopped)
        #expect(endError == nil)
        #expect(!FileManager.default.fileExists(atPath: path), "a file was left at \(path)")
    }

    /// The same stop a frame later writes that frame: a file, no error.
    @Test func aStopAfterTheFirstFrameKeepsIt() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("one.mp4")
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120, framesPerSecond: 10))))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        let heard = Heard()
        output.startRecording(to: path, recordingDelegate: heard)
        #expect(eventually { output.statistics.videoFrames >= 1 })
        output.stopRecording()
        #expect(heard.wait(files: 1, endings: 1))
        let (file, error) = try #require(heard.files.first)
        #expect(error == nil)
        #expect(file.wasCreated && file.videoFrames >= 1)
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
