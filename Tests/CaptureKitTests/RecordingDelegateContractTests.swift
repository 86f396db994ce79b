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

    // MARK: Size, free space and write errors

    /// The test pattern at 160x120, played as fast as the files are written:
    /// files grow by kilobytes a frame.
    static func patternSession() throws -> (CaptureSession, MovieFileOutput) {
        let session = CaptureSession()
        session.addInput(try CaptureInput(camera: "test-pattern", request: CaptureVideoRequest(width: 160, height: 120), realtime: false))
        let output = MovieFileOutput()
        output.settings.realTime = false
        session.addOutput(output)
        try session.startRunning()
        return (session, output)
    }

    static func sizeOnDisk(_ path: String) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? -1
    }

    /// `maxRecordedFileSize` ends the file before it passes the limit, and
    /// its didFinishRecordingTo (once) says so, "successfully finished".
    @Test func aSizeLimitReachesDidFinishWithASuccessfullyFinishedError() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.patternSession()
        defer { session.stopRunning() }
        let limit: Int64 = 150_000
        output.maxRecordedFileSize = limit
        let heard = Heard()
        output.startRecording(to: scratch.file("size.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1, seconds: 60))
        Thread.sleep(forTimeInterval: 0.2)
        #expect(heard.files.count == 1)
        let (file, error) = try #require(heard.files.first)
        #expect(error == .limitReached(.maxSize))
        #expect(error?.recordingSuccessfullyFinished == true)
        #expect(file.isComplete)
        #expect(file.bytes == Self.sizeOnDisk(file.path))
        #expect(file.bytes <= limit && file.bytes >= limit / 2, "\(file.bytes) bytes")
        #expect(try FFprobe.frames(file.path).count == file.videoFrames)
        #expect(heard.endings.count == 1 && heard.endings.first?.0 == .maxSize)
    }

    /// Restarting from each size limit's didFinishRecordingTo gives files
    /// that each fill up to the limit: it is each file's.
    @Test func aDelegateRestartsFromDidFinishAtEachSizeLimit() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.patternSession()
        defer { session.stopRunning() }
        let limit: Int64 = 120_000
        output.maxRecordedFileSize = limit
        let heard = Heard()
        heard.restart = { output, heard in
            let made = heard.files.count
            guard made < 3, heard.files.last?.error?.recordingSuccessfullyFinished == true else { return }
            output.startRecording(to: scratch.file("part-\(made + 1).mp4"), recordingDelegate: heard)
        }
        output.startRecording(to: scratch.file("part-1.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 3, endings: 3, seconds: 60))
        let files = heard.files
        #expect(files.map(\.file.path) == (1...3).map { scratch.file("part-\($0).mp4") })
        for (file, error) in files {
            #expect(error == .limitReached(.maxSize), "\(file.path)")
            #expect(file.isComplete && file.bytes == Self.sizeOnDisk(file.path))
            #expect(file.bytes <= limit && file.bytes >= limit / 2, "\(file.path): \(file.bytes) bytes")
            #expect(try FFprobe.frames(file.path).count == file.videoFrames, "\(file.path)")
        }
        #expect(heard.endings.map(\.0) == [.maxSize, .maxSize, .maxSize])
        #expect(!output.isRecording)
    }

    /// Within one recording too, `maxRecordedFileSize` counts each file
    /// (segments never reach it, though together they pass it), while
    /// `maxRecordingSize`, the whole recording's, still ends it.
    @Test func theFileSizeLimitCountsEachFileAndTheRecordingLimitEndsAll() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.patternSession()
        defer { session.stopRunning() }
        output.segmentFileSize = 60_000
        output.maxRecordedFileSize = 100_000
        output.maxRecordingSize = 300_000
        let heard = Heard()
        output.startRecording(toTemplate: try FileNameTemplate(scratch.file("seg-%n.mp4")), recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1, seconds: 60))
        let files = heard.files
        let total = files.map(\.file.bytes).reduce(0, +)
        #expect(files.count >= 3, "\(files.map(\.file.bytes))")
        #expect(files.dropLast().allSatisfy { $0.error == nil })
        #expect(files.last?.error == .limitReached(.maxSize))
        #expect(files.allSatisfy { $0.file.bytes <= 60_000 && $0.file.bytes == Self.sizeOnDisk($0.file.path) }, "\(files.map(\.file.bytes))")
        // Past the file limit together, below the recording's.
        #expect(total > 100_000 && total <= 300_000 && total >= 150_000, "\(total) bytes")
        #expect(heard.endings.count == 1 && heard.endings.first?.0 == .maxSize)
    }

    /// `minFreeDiskSpaceLimit` on a plain output: on a volume that fills as
    /// the file grows, the file ends before the free space falls below the
    /// floor; its didFinishRecordingTo (once) says so, "successfully finished".
    @Test func theFreeSpaceFloorReachesDidFinishWithASuccessfullyFinishedError() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.patternSession()
        defer { session.stopRunning() }
        let capacity: Int64 = 400_000, floor: Int64 = 250_000
        let folder = scratch.path
        output.freeSpaceQuery = { _ in capacity - LoopRecordingTests.bytes(in: folder) }
        output.minFreeDiskSpaceLimit = floor
        let heard = Heard()
        output.startRecording(to: scratch.file("floor.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1, seconds: 60))
        Thread.sleep(forTimeInterval: 0.2)
        #expect(heard.files.count == 1)
        let (file, error) = try #require(heard.files.first)
        #expect(error == .limitReached(.minFreeSpace))
        #expect(error?.recordingSuccessfullyFinished == true)
        #expect(file.isComplete && file.bytes == Self.sizeOnDisk(file.path))
        // The floor was kept, and the file was not stopped at once.
        #expect(capacity - file.bytes >= floor, "\(file.bytes) bytes")
        #expect(file.bytes >= (capacity - floor) / 2, "\(file.bytes) bytes")
        #expect(try FFprobe.frames(file.path).count == file.videoFrames)
        #expect(heard.endings.count == 1 && heard.endings.first?.0 == .minFreeSpace)
    }

    /// Makes every write(2) of the thread that calls `sampleArrived` fail
    /// with `errno`, from its `after`-th call on: a sample handler's, so the
    /// recording's writing thread, which writes the file.
    final class WriteFailure {
        let errno: Int32
        let after: Int
        private var count = 0
        /// Kept for as long as the writing thread may make a call (the output holds the handler).
        private(set) var driver: SystemCallMocking?

        init(errno: Int32, after: Int) {
            self.errno = errno
            self.after = after
        }

        func sampleArrived() {
            count += 1
            guard count == after else { return }
            let driver = SystemCallMocking.beginOnThisThread()
            driver.forcedCallPrefix = "write("
            driver.forcedErrno = .always(errno: errno)
            self.driver = driver
        }
    }

    /// A write that fails while recording (a full disk, an I/O error) ends
    /// the file: its didFinishRecordingTo comes once, with the error (not
    /// "successfully finished"), and so does didEndRecordingWith.
    @Test(arguments: [ENOSPC, EIO])
    func aWriteErrorReachesDidFinishOnceWithTheError(_ code: Int32) throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        let failure = WriteFailure(errno: code, after: 10)
        output.sampleHandler = { _, _ in failure.sampleArrived() }
        let heard = Heard()
        let path = scratch.file("failing.mp4")
        output.startRecording(to: path, recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1, seconds: 20))
        output.waitUntilFinished()
        Thread.sleep(forTimeInterval: 0.2)
        #expect(heard.files.count == 1 && heard.endings.count == 1)
        let (file, error) = try #require(heard.files.first)
        #expect(file.path == path && file.wasCreated && !file.isComplete)
        #expect(error?.recordingSuccessfullyFinished == false)
        if code == ENOSPC {
            #expect(error == .diskFull(path: path))
        } else if case .writeFailed(let failed, let reason)? = error {
            #expect(failed == path)
            #expect(reason.contains("write(") && reason.contains(String(cString: strerror(EIO))), "\(reason)")
        } else {
            Issue.record("error: \(String(describing: error))")
        }
        #expect(heard.endings.first?.0 == .error && heard.endings.first?.1 == error)
        // The failure was the injected write's.
        #expect(failure.driver?.trace.contains { $0.hasPrefix("write(") } == true)
        #expect(!output.isRecording)
    }

    /// A delegate as an AVFoundation program writes one: a plain class, not
    /// Sendable, its state unguarded. The calls of one recording come one at
    /// a time on its writing thread; the test reads what it heard after
    /// `didEndRecordingWith` (the semaphore orders the two).
    final class PlainDelegate: CaptureFileOutputRecordingDelegate {
        var started: [String] = []
        var finished: [RecordedFile] = []
        var reason: RecordingStopReason?
        let ended = DispatchSemaphore(value: 0)

        func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo path: String) { started.append(path) }
        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) { finished.append(file) }
        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            self.reason = reason
            ended.signal()
        }
    }

    @Test func aPlainNonSendableDelegateHearsTheRecording() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.runningSession()
        defer { session.stopRunning() }
        let delegate = PlainDelegate()
        output.maxRecordedDuration = MediaTime(value: 1, timescale: 4)
        output.startRecording(to: scratch.file("plain.mp4"), recordingDelegate: delegate)
        #expect(delegate.ended.wait(timeout: .now() + 20) == .success)
        #expect(delegate.started == [scratch.file("plain.mp4")])
        #expect(delegate.finished.map(\.path) == [scratch.file("plain.mp4")])
        #expect(delegate.finished.first?.isComplete == true && delegate.finished.first?.videoFrames ?? 0 > 0)
        #expect(delegate.reason == .maxDuration)
    }
}
