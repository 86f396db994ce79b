@testable import CaptureKit
import Foundation
import Testing

/// VideoDataOutput's delegate calls: on the queue given, one at a time, in
/// capture order; none after stopRunning returns, also when the delegate
/// stops the session from inside a call.
@Suite struct VideoDataOutputDelegateQueueTests {
    final class Recorder: VideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        // @unchecked: every stored property is guarded by `lock`.
        private let lock = NSLock()
        let key: DispatchSpecificKey<Int>?
        /// Stop the session from inside this call (1-based), if set.
        let stopAtCall: Int?
        let callTime: TimeInterval
        weak var session: CaptureSession?
        private(set) var calls = 0
        private(set) var offQueue = 0
        private(set) var sequences: [UInt64] = []
        private var inside = 0
        private(set) var mostInside = 0
        private(set) var callsAfterStop = 0
        private(set) var ended = 0
        private var stopReturned = false
        let reached = DispatchSemaphore(value: 0)
        let stoppedInside = DispatchSemaphore(value: 0)
        let waitFor: Int

        init(key: DispatchSpecificKey<Int>? = nil, waitFor: Int = 3, stopAtCall: Int? = nil, callTime: TimeInterval = 0.01) {
            self.key = key
            self.waitFor = waitFor
            self.stopAtCall = stopAtCall
            self.callTime = callTime
        }

        func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from input: CaptureInput) {
            lock.lock()
            calls += 1
            let number = calls
            if stopReturned { callsAfterStop += 1 }
            if let key, DispatchQueue.getSpecific(key: key) != 1 { offQueue += 1 }
            sequences.append(sample.sequence)
            inside += 1
            mostInside = max(mostInside, inside)
            lock.unlock()
            Thread.sleep(forTimeInterval: callTime)
            if number == stopAtCall {
                session?.stopRunning()
                markStopReturned()
                stoppedInside.signal()
            }
            lock.lock()
            inside -= 1
            ended += 1
            lock.unlock()
            if number == waitFor { reached.signal() }
        }

        func markStopReturned() { lock.lock(); stopReturned = true; lock.unlock() }
        func read<T>(_ body: (Recorder) -> T) -> T { lock.lock(); defer { lock.unlock() }; return body(self) }
    }

    static func session(_ output: VideoDataOutput) throws -> CaptureSession {
        let session = CaptureSession()
        // As fast as frames can be drawn: a frame always waits when the delegate returns.
        session.addInput(CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120), realtime: false)))
        session.addOutput(output)
        try session.startRunning()
        return session
    }

    @Test func aDeliveryThreadThatCannotBeMadeFailsTheStartNamingTheCall() throws {
        let output = VideoDataOutput()
        let recorder = Recorder(waitFor: 1)
        output.setSampleBufferDelegate(recorder, queue: nil)
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120), realtime: false)))
        session.addOutput(output)
        let failure = SystemCallError(call: "pthread_create(video-data)", errno: EAGAIN)
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .always(errno: EAGAIN)
            driver.forcedCallPrefix = "pthread_create(video-data)"
            #expect(throws: CaptureError.io("video data output", failure)) { try session.startRunning() }
        }
        #expect(!session.isRunning)
        #expect(recorder.read { $0.calls } == 0)
    }

    @Test func callsComeOnTheGivenQueueOneAtATimeInOrder() throws {
        let queue = DispatchQueue(label: "delegate-queue")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 1)
        let output = VideoDataOutput()
        let recorder = Recorder(key: key, waitFor: 6)
        output.setSampleBufferDelegate(recorder, queue: queue)
        #expect(output.sampleBufferCallbackQueue === queue)
        let session = try Self.session(output)
        let arrived = recorder.reached.wait(timeout: .now() + 30) == .success
        session.stopRunning()
        #expect(arrived)
        recorder.read { recorder in
            #expect(recorder.calls >= 6)
            #expect(recorder.offQueue == 0)
            #expect(recorder.mostInside == 1)
            #expect(zip(recorder.sequences, recorder.sequences.dropFirst()).allSatisfy { $0 < $1 }, "\(recorder.sequences)")
        }
        // A busy delegate still has frames dropped, not queued.
        #expect(output.droppedFrameCount > 0)
    }

    @Test(arguments: [false, true])
    func noCallAfterStopRunningReturns(onQueue: Bool) throws {
        let output = VideoDataOutput()
        let recorder = Recorder(waitFor: 3, callTime: 0.05)
        output.setSampleBufferDelegate(recorder, queue: onQueue ? DispatchQueue(label: "delegate-queue") : nil)
        let session = try Self.session(output)
        #expect(recorder.reached.wait(timeout: .now() + 30) == .success)
        session.stopRunning()
        recorder.markStopReturned()
        let (calls, ended) = recorder.read { ($0.calls, $0.ended) }
        #expect(calls == ended, "stopRunning returned while a call was under way")
        Thread.sleep(forTimeInterval: 0.3)
        recorder.read { recorder in
            #expect(recorder.callsAfterStop == 0)
            #expect(recorder.calls == calls)
        }
    }

    @Test(arguments: [false, true])
    func stoppingFromInsideACallNeitherDeadlocksNorGetsAnotherCall(onQueue: Bool) throws {
        let output = VideoDataOutput()
        let recorder = Recorder(waitFor: 0, stopAtCall: 3)
        output.setSampleBufferDelegate(recorder, queue: onQueue ? DispatchQueue(label: "delegate-queue") : nil)
        let session = try Self.session(output)
        recorder.session = session
        #expect(recorder.stoppedInside.wait(timeout: .now() + 30) == .success, "stopRunning from the callback did not return")
        #expect(!session.isRunning)
        Thread.sleep(forTimeInterval: 0.3)
        recorder.read { recorder in
            #expect(recorder.calls == 3)
            #expect(recorder.callsAfterStop == 0)
        }
        // The output runs again with the session.
        let again = Recorder(waitFor: 2)
        output.setSampleBufferDelegate(again, queue: onQueue ? DispatchQueue(label: "delegate-queue-2") : nil)
        try session.startRunning()
        #expect(again.reached.wait(timeout: .now() + 30) == .success)
        session.stopRunning()
    }
}
