import Foundation
import Glibc
import Testing
@testable import CaptureKit

/// A whole capture session recording from a fake V4L2 camera through the
/// real capture source: what the file holds when the camera goes away, and
/// a copy of H.264 joined in the middle of a GOP.
@Suite struct FakeCameraRecordingTests {
    final class Recorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        // @unchecked: every field is read and written under `condition`.
        private let condition = NSCondition()
        private var finished: [RecordedFile] = []
        private var endReason: RecordingStopReason?
        private var endError: RecordingError?

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            condition.lock()
            finished.append(file)
            condition.unlock()
        }

        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            condition.lock()
            endReason = reason
            endError = error
            condition.broadcast()
            condition.unlock()
        }

        var files: [RecordedFile] { condition.lock(); defer { condition.unlock() }; return finished }
        var reason: RecordingStopReason? { condition.lock(); defer { condition.unlock() }; return endReason }
        var error: RecordingError? { condition.lock(); defer { condition.unlock() }; return endError }

        func waitForEnd() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: 30)
            while endReason == nil { if !condition.wait(until: deadline) { return false } }
            return true
        }
    }

    /// A running session with `camera` as its input and `output`; the camera
    /// is not locked for configuration (its path is no real node).
    func runningSession(_ camera: FakeV4L2Camera, _ output: MovieFileOutput) throws -> CaptureSession {
        let input = try CaptureDeviceInput(device: camera.device())
        input.locksConfiguration = false
        let session = CaptureSession()
        session.addInput(input)
        session.addOutput(output)
        try session.startRunning()
        return session
    }

    /// The camera vanishes mid-stream (DQBUF or QBUF answer ENODEV): the
    /// source ends as lost, the session tells the output, and the file is
    /// finished as device-disconnected, complete, holding every frame the
    /// camera gave while it recorded and nothing else.
    @Test(arguments: ["dequeue", "queue"])
    func aCameraThatVanishesLeavesACompleteFile(failingRequest: String) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("lost.mp4")
        let vanish: FakeV4L2Camera.Step = failingRequest == "dequeue" ? .failDequeue(ENODEV) : .failQueue(ENODEV)
        // Paused until the recording runs; then 24 frames, the disconnect,
        // and (for QBUF) frames for the buffers still queued.
        let camera = try FakeV4L2Camera(script: [.pause] + FakeV4L2Camera.numberedFrames(24) + [vanish]
                                            + FakeV4L2Camera.numberedFrames(16, from: 24))
        let output = MovieFileOutput()
        let session = try runningSession(camera, output)
        defer { session.stopRunning() }
        let recorder = Recorder()
        output.startRecording(to: path, recordingDelegate: recorder)
        #expect(output.isRecording)
        camera.resume()
        try #require(recorder.waitForEnd())

        #expect(recorder.reason == .deviceDisconnected)
        #expect(recorder.error == .deviceLost("/dev/fake-video0"))
        let file = try #require(recorder.files.first)
        #expect(file.path == path)
        #expect(file.isComplete)
        let delivered = camera.dequeuedBuffers
        // Refused at QBUF, the buffers still in the driver come back filled
        // (none, when the writer held all eight).
        if failingRequest == "dequeue" { #expect(delivered == 24) } else { #expect(delivered >= 24 && delivered <= 32) }
        #expect(file.videoFrames == delivered)
        #expect(output.statistics.videoFrames == delivered)
        #expect(output.statistics.droppedByDevice == 0)
        #expect(try FFprobe.frames(path).count == delivered)
        // The camera was let go of: nothing mapped, no handle open.
        session.stopRunning()
        #expect(camera.mappedBuffers == 0)
        #expect(camera.openHandles == 0)
    }

    /// A fake H.264 camera joined mid-GOP, its parameter sets in buffers of
    /// their own: the copy starts at the IDR, the frames before it counted
    /// as dropped, and the file holds exactly the frames reported.
    @Test func aCopyFromAnH264CameraJoinedMidGOPStartsAtTheIDR() throws {
        let units = InBandH264Tests.accessUnits
        try #require(units.count == InBandH264Tests.frameCount)
        var buffers: [[UInt8]] = []
        for unit in units[5...] {
            let summary = unit.withUnsafeBytes { AccessUnit($0, codec: .h264) }
            if let sets = summary.parameterSetRanges.last {
                buffers += [Array(unit[..<sets.upperBound]), Array(unit[sets.upperBound...])]
            } else {
                buffers.append(unit)
            }
        }
        let camera = try FakeV4L2Camera(fourcc: FourCC("H264")!, width: 160, height: 120, bufferSize: 256 * 1024,
                                        script: [.pause] + buffers.map { .frame(.init(bytes: $0)) })
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("copy.mp4")
        let output = MovieFileOutput()
        output.settings.video = .passthrough
        let session = try runningSession(camera, output)
        defer { session.stopRunning() }
        let recorder = Recorder()
        output.startRecording(to: path, recordingDelegate: recorder)
        camera.resume()
        #expect(camera.waitUntilScriptDone())
        let deadline = Date(timeIntervalSinceNow: 10)
        while output.statistics.videoFrames < 30, Date() < deadline { usleep(5_000) }
        output.stopRecording()
        try #require(recorder.waitForEnd())

        #expect(recorder.reason == .stopped)
        #expect(recorder.error == nil)
        let file = try #require(recorder.files.first)
        #expect(file.isComplete)
        #expect(file.videoFrames == 30)
        #expect(output.statistics.droppedBeforeKeyframe == 10)
        let packets = try FFprobe.json(["-select_streams", "v:0", "-show_entries", "packet=flags", path])["packets"] as? [[String: Any]] ?? []
        #expect(packets.count == 30)
        #expect((packets.first?["flags"] as? String)?.hasPrefix("K") == true)
        let frames = try FFprobe.frames(path)
        #expect(frames.count == 30)
        #expect(frames.first?.key == true)
    }
}
