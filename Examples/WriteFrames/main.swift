// WriteFrames: an asset writer fed from a video data output, the way an
// AVFoundation program does it. The camera's frames (the virtual test
// pattern where there is no camera) arrive as BGRA sample buffers on a
// dispatch queue and are appended to an H.264 writer input given only a
// bit rate, no frame rate. Then the file is read back with a player item
// video output, and one frame is saved beside the same frame as captured,
// for comparison.
//
//     swift run WriteFrames [FOLDER] [FRAMES]
import CaptureKit
import Dispatch
import Foundation

/// Appends every frame it gets until it has `count`; keeps the middle one as captured.
final class FrameWriter: VideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: the counters and the kept frame are guarded by `condition`; the writer input is used on the delegate queue only.
    private let condition = NSCondition()
    private let writer: AssetWriter
    private let input: AssetWriterInput
    private let count: Int
    private var appended = 0
    private var start: MediaTime?
    private(set) var failure: (any Error)?
    /// The middle frame as captured (BGRA rows, packed) and its time in the file.
    private(set) var kept: (bgra: [UInt8], width: Int, height: Int, time: MediaTime)?

    init(writer: AssetWriter, input: AssetWriterInput, count: Int) {
        self.writer = writer
        self.input = input
        self.count = count
    }

    func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from captureInput: CaptureInput) {
        condition.lock()
        defer { condition.unlock() }
        guard appended < count, failure == nil else { return }
        do {
            if start == nil {
                try writer.startSession(atSourceTime: sample.presentationTime)
                start = sample.presentationTime
            }
            try input.append(.video(sample))
            if appended == count / 2, let image = sample.imageBuffer, let start {
                kept = (Self.packedRows(image), image.width, image.height, sample.presentationTime - start)
            }
            appended += 1
        } catch {
            failure = error
        }
        if appended == count || failure != nil { condition.broadcast() }
    }

    /// The picture's rows without padding.
    static func packedRows(_ image: SampleImageBuffer) -> [UInt8] {
        image.withLockedBaseAddress { image in
            var rows = [UInt8]()
            let rowBytes = image.width * 4
            for row in 0..<image.height {
                let start = image.baseAddress!.advanced(by: row * image.bytesPerRow)
                rows.append(contentsOf: UnsafeRawBufferPointer(start: start, count: rowBytes))
            }
            return rows
        }
    }

    func waitUntilDone() -> Int {
        condition.lock()
        defer { condition.unlock() }
        while appended < count && failure == nil { condition.wait() }
        return appended
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("WriteFrames: \(message)\n".utf8))
    exit(1)
}

/// A binary PPM of packed RGB rows.
func writePPM(_ path: String, rgb: [UInt8], width: Int, height: Int) throws {
    var data = Data("P6\n\(width) \(height)\n255\n".utf8)
    data.append(contentsOf: rgb)
    try data.write(to: URL(fileURLWithPath: path))
}

let arguments = Array(CommandLine.arguments.dropFirst())
let folder = arguments.first ?? "."
let frames = arguments.count > 1 ? Int(arguments[1]) ?? 90 : 90
guard let camera = CaptureDevice.default(for: .video) else { fail("no camera, not even a virtual one") }

let session = CaptureSession()
let videoOutput = VideoDataOutput(alwaysDiscardsLateVideoFrames: false)
videoOutput.videoSettings = VideoDataOutput.Settings(pixelFormat: .bgra)
let path = folder + "/frames.mp4"
do {
    session.addInput(try CaptureDeviceInput(device: camera))
    session.addOutput(videoOutput)
    try session.startRunning()
} catch {
    fail("\(error)")
}
// The camera's size, as the output recommends it; a bit rate, and no frame rate.
guard let recommended = videoOutput.recommendedVideoSettingsForAssetWriter(writingTo: .mp4) else { fail("the camera gives no video") }
let delegate: FrameWriter
do {
    let writer = try AssetWriter(outputPath: path, fileType: .mp4)
    let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(codec: .h264, width: recommended.width, height: recommended.height,
                                                                            bitRate: 2_000_000)))
    input.expectsMediaDataInRealTime = true
    try writer.add(input)
    try writer.startWriting()
    delegate = FrameWriter(writer: writer, input: input, count: frames)
    videoOutput.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
    let appended = delegate.waitUntilDone()
    session.stopRunning()
    if let failure = delegate.failure { fail("\(failure)") }
    let finished = DispatchSemaphore(value: 0)
    try input.markAsFinished()
    writer.finishWriting { finished.signal() }
    finished.wait()
    if let error = writer.error { fail("\(error)") }
    print("\(path): \(appended) frames, \(recommended.width)x\(recommended.height)")
} catch {
    fail("\(error)")
}

// Read the middle frame back and save it beside the one captured.
guard let kept = delegate.kept else { fail("no frame was kept") }
do {
    let item = try PlayerItem(path: path)
    let videoOut = try PlayerItemVideoOutput(item: item, pixelFormat: .rgb24)
    guard let picture = try videoOut.copyPixelBuffer(forItemTime: kept.time) else { fail("no frame at \(kept.time.seconds) s") }
    var readBack = [UInt8]()
    picture.withUnsafeBytes(plane: 0) { bytes in
        for row in 0..<picture.height {
            readBack.append(contentsOf: bytes[(row * picture.bytesPerRow(plane: 0))...].prefix(picture.width * 3))
        }
    }
    var captured = [UInt8]()
    captured.reserveCapacity(kept.width * kept.height * 3)
    for pixel in stride(from: 0, to: kept.bgra.count, by: 4) {
        captured += [kept.bgra[pixel + 2], kept.bgra[pixel + 1], kept.bgra[pixel]]
    }
    try writePPM(folder + "/captured.ppm", rgb: captured, width: kept.width, height: kept.height)
    try writePPM(folder + "/read-back.ppm", rgb: readBack, width: picture.width, height: picture.height)
    print("frame at \(String(format: "%.3f", kept.time.seconds)) s: \(folder)/captured.ppm \(folder)/read-back.ppm")
} catch {
    fail("\(error)")
}
