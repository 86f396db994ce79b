// RecordClip: CaptureKit used the way AVFoundation is. A session runs on the
// default camera and microphone (the virtual test pattern and tone where
// there are none); one movie output records 3 s to clip-1.mp4, switches to
// clip-2.mp4 for 2 s, stops, and records 1 s more to clip-3.mp4 while the
// session keeps the camera open.
//
//     swift run RecordClip [FOLDER]
import CaptureKit
import Foundation

/// Hears what the movie output did; `waitForEnd()` returns once a recording ended.
final class ClipDelegate: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.
    private let condition = NSCondition()
    private var ended = false
    private(set) var failure: RecordingError?

    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
        print("\(file.path): \(String(format: "%.2f", file.duration.seconds)) s, \(file.videoFrames) frames, \(file.audioSamples) audio samples")
    }

    func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
        condition.lock()
        ended = true
        if let error, !error.recordingSuccessfullyFinished { failure = error }
        condition.broadcast()
        condition.unlock()
    }

    func waitForEnd() {
        condition.lock()
        while !ended { condition.wait() }
        ended = false
        condition.unlock()
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("RecordClip: \(message)\n".utf8))
    exit(1)
}

let folder = CommandLine.arguments.dropFirst().first ?? "."
guard let camera = CaptureDevice.default(for: .video), let microphone = CaptureDevice.default(for: .audio) else {
    fail("no camera or microphone, not even a virtual one")
}
print("camera: \(camera.localizedName) (\(camera.uniqueID)); microphone: \(microphone.localizedName) (\(microphone.uniqueID))")

let session = CaptureSession()
let movieOutput = MovieFileOutput()
do {
    session.beginConfiguration()
    session.addInput(try CaptureDeviceInput(device: camera))
    session.addInput(try CaptureDeviceInput(device: microphone))
    session.addOutput(movieOutput)
    session.commitConfiguration()
    try session.startRunning()
} catch {
    fail("\(error)")
}

let delegate = ClipDelegate()
movieOutput.startRecording(to: folder + "/clip-1.mp4", recordingDelegate: delegate)
Thread.sleep(forTimeInterval: 3)
// Recording again while recording switches files at the next frame: no sample lost or repeated.
movieOutput.startRecording(to: folder + "/clip-2.mp4", recordingDelegate: delegate)
Thread.sleep(forTimeInterval: 2)
movieOutput.stopRecording()
delegate.waitForEnd()

// The session still runs with the camera open: record once more.
movieOutput.startRecording(to: folder + "/clip-3.mp4", recordingDelegate: delegate)
Thread.sleep(forTimeInterval: 1)
movieOutput.stopRecording()
delegate.waitForEnd()
session.stopRunning()
if let failure = delegate.failure { fail("\(failure)") }
