@testable import CaptureKit
import Foundation
import Synchronization
import Testing

/// A capture thread that cannot be made: the session does not capture on
/// the caller's thread (which would never return), but ends the input and
/// reports a runtime error naming the call.
@Suite struct SessionThreadFailureTests {
    @Test func aCaptureThreadThatCannotBeMadeEndsItsInputWithAnErrorNamingTheCall() throws {
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120), realtime: false)))
        let errors = Mutex<[CaptureError]>([])
        _ = session.addObserver { notification in
            if case .runtimeError(let error) = notification { errors.withLock { $0.append(error) } }
        }
        try SystemCallMocking.withMocking { (driver) throws in
            driver.forcedErrno = .always(errno: EAGAIN)
            driver.forcedCallPrefix = "pthread_create(capture-"
            try session.startRunning()
        }
        session.stopRunning()
        let failure = SystemCallError(call: "pthread_create(capture-v0)", errno: EAGAIN)
        #expect(errors.withLock { $0 } == [.io("capture-v0", failure)])
    }

    /// A recording whose writing thread cannot be made is refused: its
    /// delegate hears the error, no file is left, and the session runs on.
    @Test func aWritingThreadThatCannotBeMadeRefusesTheRecordingAndLeavesNoFile() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try RecordingDelegateContractTests.runningSession()
        defer { session.stopRunning() }
        let heard = RecordingDelegateContractTests.Heard()
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .always(errno: EAGAIN)
            driver.forcedCallPrefix = "pthread_create(writer"
            output.startRecording(to: scratch.file("refused.mp4"), recordingDelegate: heard)
        }
        #expect(heard.wait(files: 1, endings: 1))
        let (file, error) = try #require(heard.files.first)
        #expect(!file.wasCreated)
        guard case .writeFailed(let path, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(path == scratch.file("refused.mp4"))
        #expect(reason.contains("pthread_create(writer)"), "\(reason)")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("refused.mp4")))
        #expect(session.isRunning)
        // The next recording, with threads to be had, is written.
        output.startRecording(to: scratch.file("next.mp4"), recordingDelegate: heard)
        Thread.sleep(forTimeInterval: 0.3)
        output.stopRecording()
        #expect(heard.wait(files: 2, endings: 2))
        #expect(heard.files.last?.error == nil && heard.files.last?.file.videoFrames ?? 0 > 0)
    }
}
