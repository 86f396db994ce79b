// SaveFrame: a video data output used the way an AVFoundation program uses
// AVCaptureVideoDataOutput. A session runs on the default camera (the
// virtual test pattern where there is none); the output hands BGRA frames
// to a delegate on a dispatch queue; the delegate takes the 10th frame,
// saves it as a JPEG, and stops the session from inside its callback.
//
//     swift run SaveFrame PATH.jpg
import CaptureKit
import Dispatch
import Foundation

/// Saves the `frameNumber`th frame it gets to `path`, then stops the session.
final class FrameSaver: VideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: `frames`, `saved` and `failure` are written on the delegate queue only, and read
    // by the main thread after `done` is signalled; `session` is set before the session starts.
    let path: String
    let frameNumber: Int
    weak var session: CaptureSession?
    let done = DispatchSemaphore(value: 0)
    private var frames = 0
    private(set) var saved: (format: PixelFormat, width: Int, height: Int)?
    private(set) var failure: (any Error)?

    init(path: String, frameNumber: Int) {
        self.path = path
        self.frameNumber = frameNumber
    }

    func captureOutput(didOutput sample: VideoSampleBuffer) throws {
        guard let imageBuffer = sample.imageBuffer else { throw WriterError.invalidState("frame \(frames) has no image buffer") }
        // As with CVPixelBuffer: the pixels are the capture's, read while locked.
        let copy = try PixelBuffer(copying: imageBuffer)
        let jpegPixels = try PixelConverter(pixelFormat: ImageFormat.jpeg.pixelFormat, width: copy.width, height: copy.height).convert(copy)
        let jpeg = try ImageFile.encode(jpegPixels, as: .jpeg, quality: 90)
        try ImageFile.write(jpeg, to: path)
        saved = (imageBuffer.pixelFormat, imageBuffer.width, imageBuffer.height)
    }

    func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from input: CaptureInput) {
        frames += 1
        guard frames == frameNumber else { return }
        do {
            try captureOutput(didOutput: sample)
        } catch {
            failure = error
        }
        // Stopping from the callback: no further call comes, and nothing waits on this queue.
        session?.stopRunning()
        done.signal()
    }
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("SaveFrame: \(message)\n".utf8))
    exit(status)
}

guard CommandLine.arguments.count == 2 else { fail("usage: SaveFrame PATH.jpg", status: 64) }
let path = CommandLine.arguments[1]
guard let camera = CaptureDevice.default(for: .video) else { fail("no camera, not even a virtual one", status: 66) }

let session = CaptureSession()
let videoOutput = VideoDataOutput()
videoOutput.videoSettings = VideoDataOutput.Settings(pixelFormat: .bgra)
let saver = FrameSaver(path: path, frameNumber: 10)
saver.session = session
videoOutput.setSampleBufferDelegate(saver, queue: DispatchQueue(label: "video-frames"))
do {
    session.beginConfiguration()
    session.addInput(try CaptureDeviceInput(device: camera))
    session.addOutput(videoOutput)
    session.commitConfiguration()
    try session.startRunning()
} catch {
    fail("\(camera.localizedName): \(error)", status: 69)
}

guard saver.done.wait(timeout: .now() + 60) == .success else {
    session.stopRunning()
    fail("no 10th frame from \(camera.localizedName) within 60 s", status: 69)
}
if let failure = saver.failure { fail("\(failure)", status: 73) }
guard let saved = saver.saved else { fail("\(path): nothing was saved", status: 73) }
print("\(path): \(saved.format) \(saved.width)x\(saved.height)")
