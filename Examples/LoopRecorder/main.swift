// LoopRecorder: the AVFoundation recorder loop. A movie file output with a
// per-file duration limit records the default camera (the virtual test
// pattern where there is none); each time a file reaches the limit, the
// delegate's didFinishRecordingTo hears it as an error whose "successfully
// finished" is true and starts the next file from there, until COUNT files.
// Focus and exposure are locked first where the camera can (a virtual
// camera cannot: it says so, and nothing changes).
//
//     swift run LoopRecorder [FOLDER] [SECONDS] [COUNT]
import CaptureKit
import Foundation

final class LoopDelegate: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.
    private let condition = NSCondition()
    private let folder: String
    private let count: Int
    private var recorded = 0
    private var finished = false
    private(set) var failure: RecordingError?

    init(folder: String, count: Int) {
        self.folder = folder
        self.count = count
    }

    func path(_ number: Int) -> String { "\(folder)/loop-\(number).mp4" }

    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
        print("\(file.path): \(String(format: "%.3f", file.duration.seconds)) s, \(file.videoFrames) frames" + (error.map { " (\($0))" } ?? ""))
        condition.lock()
        defer { condition.unlock() }
        recorded += 1
        if let error, !error.recordingSuccessfullyFinished {
            failure = error
        } else if recorded < count {
            // The limit ended this file: start the next one, as an AVFoundation program does.
            output.startRecording(to: path(recorded + 1), recordingDelegate: self)
            return
        }
        finished = true
        condition.broadcast()
    }

    func waitUntilDone() {
        condition.lock()
        while !finished { condition.wait() }
        condition.unlock()
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("LoopRecorder: \(message)\n".utf8))
    exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
let folder = arguments.first ?? "."
let seconds = arguments.count > 1 ? Double(arguments[1]) ?? 1 : 1
let count = arguments.count > 2 ? Int(arguments[2]) ?? 3 : 3
guard let camera = CaptureDevice.default(for: .video) else { fail("no camera, not even a virtual one") }

// Keep focus and exposure steady across the files, as the camera allows.
do {
    try camera.lockForConfiguration()
    if camera.isFocusModeSupported(.locked) { camera.focusMode = .locked }
    if camera.isExposureModeSupported(.locked) { camera.exposureMode = .locked }
    camera.unlockForConfiguration()
} catch {
    fail("\(error)")
}
print("focus: \(camera.focusMode.rawValue), exposure: \(camera.exposureMode.rawValue)")

let session = CaptureSession()
let movieOutput = MovieFileOutput()
movieOutput.maxRecordedDuration = MediaTime(seconds: seconds, preferredTimescale: 1000)
do {
    session.beginConfiguration()
    session.addInput(try CaptureDeviceInput(device: camera))
    session.addOutput(movieOutput)
    session.commitConfiguration()
    try session.startRunning()
} catch {
    fail("\(error)")
}

let delegate = LoopDelegate(folder: folder, count: count)
movieOutput.startRecording(to: delegate.path(1), recordingDelegate: delegate)
delegate.waitUntilDone()
session.stopRunning()
if let failure = delegate.failure { fail("\(failure)") }
