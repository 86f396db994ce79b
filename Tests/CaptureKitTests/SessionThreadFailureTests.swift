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
}
