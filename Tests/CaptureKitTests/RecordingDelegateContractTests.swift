import Foundation
import Testing
@testable import CaptureKit

/// AVCaptureFileOutput's delegate contract: every file a recording was
/// asked to write reaches `didFinishRecordingTo` exactly once, with the
/// error that ended it (a limit: "successfully finished"; a file that could
/// not be made: not), and a program may start the next recording from
/// there; `maxRecordedDuration` limits each file.
@Suite struct RecordingDelegateContractTests {
    typealias TickingCamera = SessionLifecycleTests.TickingCamera

    /// Every call the delegate heard, in order; `restart` (if set) is
    /// called from `didFinishRecordingTo`, as an AVFoundation recorder
    /// loop does.
    final class Heard: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        // @unchecked: every stored property is guarded by `condition`.
        private let condition = NSCondition()
        private var finishedFiles: [(file: RecordedFile, error: RecordingError?)] = []
        private var ends: [(RecordingStopReason, RecordingError?)] = []
        var restart: ((CaptureFileOutput, Heard) -> Void)?

        var files: [(file: RecordedFile, error: RecordingError?)] { condition.lock(); defer { condition.unlock() }; return finishedFiles }
        var endings: [(RecordingStopReason, RecordingError?)] { condition.lock(); defer { condition.unlock() }; return ends }

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            condition.lock()
            finishedFiles.append((file, error))
            condition.broadcast()
            condition.unlock()
            restart?(output, self)
        }

        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            condition.lock()
            ends.append((reason, error))
            condition.broadcast()
            condition.unlock()
        }

        /// Waits until `count` files were reported and as many recordings ended.
        func wait(files count: Int, endings endCount: Int, seconds: Double = 20) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: seconds)
            while finishedFiles.count < count || ends.count < endCount {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }

    static func runningSession() throws -> (CaptureSession, MovieFileOutput) {
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TickingCamera()))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        return (session, output)
    }

    @Test func aDurationLimitReachesDidFinishWithASuccessfullyFinishedError() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        output.maxRecordedDuration = MediaTime(value: 1, timescale: 2)
        let heard = Heard()
        output.startRecording(to: scratch.file("limit.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1))
        Thread.sleep(forTimeInterval: 0.2)
        #expect(heard.files.count == 1)
        let (file, error) = try #require(heard.files.first)
        #expect(error == .limitReached(.maxDuration))
        #expect(error?.recordingSuccessfullyFinished == true)
        #expect(file.isComplete)
        #expect(abs(file.duration.seconds - 0.5) < 0.001)
        #expect(heard.endings.count == 1 && heard.endings.first?.0 == .maxDuration)
    }

    /// The usual AVFoundation loop: each limit's didFinishRecordingTo starts
    /// the next file; three files of the limit's length come out.
    @Test func aDelegateRestartsFromDidFinishAtEachLimit() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        output.maxRecordedDuration = MediaTime(value: 2, timescale: 5)
        let heard = Heard()
        heard.restart = { output, heard in
            let made = heard.files.count
            guard made < 3, heard.files.last?.error?.recordingSuccessfullyFinished == true else { return }
            output.startRecording(to: scratch.file("loop-\(made + 1).mp4"), recordingDelegate: heard)
        }
        output.startRecording(to: scratch.file("loop-1.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 3, endings: 3))
        let files = heard.files
        #expect(files.map(\.file.path) == (1...3).map { scratch.file("loop-\($0).mp4") })
        for (file, error) in files {
            #expect(error == .limitReached(.maxDuration))
            #expect(abs(file.duration.seconds - 0.4) < 0.001, "\(file.path): \(file.duration.seconds) s")
            let probed = try #require(FFprobe.streams(file.path).first)
            #expect(abs((Double(probed["duration"] as? String ?? "") ?? 0) - 0.4) <= 0.021)
        }
        #expect(!output.isRecording)
    }

    @Test func aFileThatCannotBeMadeReachesDidFinishOnce() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        let heard = Heard()
        let path = scratch.file("missing-folder/clip.mp4")
        output.startRecording(to: path, recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1))
        Thread.sleep(forTimeInterval: 0.2)
        #expect(heard.files.count == 1)
        let (file, error) = try #require(heard.files.first)
        #expect(file.path == path)
        #expect(!file.isComplete && !file.wasCreated && file.bytes == 0 && file.videoFrames == 0)
        #expect(error?.recordingSuccessfullyFinished == false)
        if case .cannotCreate(let failed, _)? = error { #expect(failed == path) } else { Issue.record("error: \(String(describing: error))") }
        #expect(heard.endings.count == 1 && heard.endings.first?.0 == .error)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// Switching to a file that cannot be made finishes the one before,
    /// complete and without an error, and reports the one that failed.
    @Test func aSwitchToAFileThatCannotBeMadeReportsBoth() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        let heard = Heard()
        output.startRecording(to: scratch.file("first.mp4"), recordingDelegate: heard)
        Thread.sleep(forTimeInterval: 0.3)
        output.startRecording(to: scratch.file("missing/second.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 2, endings: 1))
        let files = heard.files
        #expect(files.count == 2)
        let unmade = try #require(files.first { $0.file.path == scratch.file("missing/second.mp4") })
        #expect(!unmade.file.isComplete && unmade.error?.recordingSuccessfullyFinished == false)
        let first = try #require(files.first { $0.file.path == scratch.file("first.mp4") })
        #expect(first.error == nil && first.file.isComplete && first.file.videoFrames > 0)
        #expect(try FFprobe.frames(first.file.path).count == first.file.videoFrames)
    }

    /// `maxRecordedDuration` limits each file: a file switched to counts from its own start.
    @Test func theDurationLimitCountsEachFile() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        output.maxRecordedDuration = MediaTime(value: 1, timescale: 1)
        let heard = Heard()
        output.startRecording(to: scratch.file("a.mp4"), recordingDelegate: heard)
        Thread.sleep(forTimeInterval: 0.6)
        output.startRecording(to: scratch.file("b.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 2, endings: 1))
        let files = heard.files
        #expect(files.map(\.file.path) == [scratch.file("a.mp4"), scratch.file("b.mp4")])
        #expect(files.first?.error == nil)
        #expect(files.last?.error == .limitReached(.maxDuration))
        #expect(abs((files.last?.file.duration.seconds ?? 0) - 1) < 0.001, "\(files.map(\.file.duration.seconds))")
    }

    /// The whole recording's limit (capctl's --max-duration) still spans files.
    @Test func theRecordingLimitSpansFiles() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        output.maxRecordingDuration = MediaTime(value: 1, timescale: 1)
        output.segmentDuration = MediaTime(value: 2, timescale: 5)
        let heard = Heard()
        output.startRecording(toTemplate: try FileNameTemplate(scratch.file("seg-%n.mp4")), recordingDelegate: heard)
        #expect(heard.wait(files: 3, endings: 1))
        let files = heard.files
        #expect(files.map { ($0.file.duration.seconds * 1000).rounded() } == [400, 400, 200])
        #expect(files.map { $0.error == nil } == [true, true, false])
        #expect(files.last?.error == .limitReached(.maxDuration))
    }

    /// A camera that goes away ends the file with `deviceLost`, which the
    /// file's didFinishRecordingTo says (the file is complete), once.
    @Test func aLostCameraReachesDidFinishWithItsError() throws {
        let scratch = try WriterScratchDirectory()
        let camera = TickingCamera()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: camera))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        let heard = Heard()
        output.startRecording(to: scratch.file("lost.mp4"), recordingDelegate: heard)
        #expect(eventually { output.statistics.videoFrames >= 10 })
        camera.vanish()
        #expect(heard.wait(files: 1, endings: 1))
        Thread.sleep(forTimeInterval: 0.2)
        #expect(heard.files.count == 1)
        let (file, error) = try #require(heard.files.first)
        #expect(error == .deviceLost("ticking"))
        #expect(error?.recordingSuccessfullyFinished == true && file.isComplete && file.wasCreated)
        #expect(try FFprobe.frames(file.path).count == file.videoFrames)
        #expect(heard.endings.first?.0 == .deviceDisconnected)
    }
}
