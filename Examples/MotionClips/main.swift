// MotionClips: a motion-triggered recorder. The default camera (or a clip
// played as one, given as the first argument) feeds a movie file output
// that starts paused (armed) with a 2 s pre-roll; its motion trigger
// resumes it when something moves and pauses it once the picture has been
// still for 2 s. Each event is a file of its own, begun with the 2 s before
// the movement, and printed with its duration once finished.
//
//     swift run MotionClips [CLIP] [FOLDER]
import CaptureKit
import Foundation

final class Clips: CaptureFileOutputRecordingDelegate, Sendable {
    let ended = DispatchSemaphore(value: 0)

    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
        print("\(file.path): \(String(format: "%.2f", file.duration.seconds)) s" + (error.map { " (\($0))" } ?? ""))
    }

    func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
        ended.signal()
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let twoSeconds = MediaTime(seconds: 2, preferredTimescale: 1)
do {
    let session = CaptureSession()
    if let clip = arguments.first {
        session.addInput(try CaptureInput(camera: "file:" + clip))
    } else if let camera = CaptureDevice.default(for: .video) {
        session.addInput(try CaptureDeviceInput(device: camera))
    }
    let output = MovieFileOutput()
    output.startsRecordingPaused = true
    output.preRollDuration = twoSeconds
    output.motionDetector = MotionDetector(configuration: MotionDetector.Configuration(stillDuration: twoSeconds))
    output.startsNewFileOnResume = true
    session.addOutput(output)
    let clips = Clips()
    output.startRecording(toTemplate: try FileNameTemplate((arguments.count > 1 ? arguments[1] : ".") + "/clip-%n.mp4"), recordingDelegate: clips)
    try session.startRunning()
    // A clip ends by itself (its end ends the recording); a camera runs until interrupted.
    clips.ended.wait()
    session.stopRunning()
} catch {
    FileHandle.standardError.write(Data("MotionClips: \(error)\n".utf8))
    exit(1)
}
