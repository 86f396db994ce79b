import Foundation
import Testing
@testable import CaptureKit

/// A recording stopped before any media reached its file (AVFoundation's
/// AVErrorNoDataCaptured): it ends as stopped, not as an error; its file
/// reaches `didFinishRecordingTo` once, not made, with `.noDataCaptured`;
/// nothing is left at the path.
@Suite struct StopBeforeMediaTests {
    typealias Heard = RecordingDelegateContractTests.Heard

    /// A recording of a camera at `framesPerSecond` (test pattern, encoded
    /// to H.264 by the shared encoder), started `delay` after its last frame
    /// and stopped 50 ms later: before its next frame.
    static func stopBetweenFrames(framesPerSecond: Double, into path: String) throws -> Heard {
        let session = CaptureSession()
        let camera = TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120, framesPerSecond: framesPerSecond))
        session.addInput(CaptureInput(source: camera))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        // The first frame is stamped as the session starts; the next comes a second later.
        Thread.sleep(forTimeInterval: 0.2)
        let heard = Heard()
        output.startRecording(to: path, recordingDelegate: heard)
        Thread.sleep(forTimeInterval: 0.05)
        output.stopRecording()
        #expect(heard.wait(files: 1, endings: 1))
        return heard
    }

    @Test func aStopBeforeTheFirstFrameLeavesNoFileAndNoError() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("early.mp4")
        let heard = try Self.stopBetweenFrames(framesPerSecond: 1, into: path)
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
        Thread.sleep(forTimeInterval: 0.5)
        output.stopRecording()
        #expect(heard.wait(files: 1, endings: 1))
        let (file, error) = try #require(heard.files.first)
        #expect(error == nil)
        #expect(file.wasCreated && file.videoFrames >= 1)
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
