import Foundation
import Testing
@testable import CaptureKit

/// Every codec path a camera's frames can take into a file (raw encoded,
/// MJPEG copied or decoded and encoded, H.264 copied or decoded and
/// encoded): the frames a recording reports are the frames its file holds,
/// and a recording that took frames and could write none of them fails.
@Suite struct HonestCountTests {
    /// A camera that delivers `frames` (bytes, keyframe) in `layout`, one
    /// every 1/30 s of capture time, then ends.
    final class ListCamera: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.video
        let path = "list-camera"
        let localizedName = "List camera"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        let layout: VideoSampleLayout
        let frames: [(bytes: [UInt8], keyframe: Bool)]
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: layout, width: 160, height: 120, frameDuration: MediaTime(value: 1, timescale: 30), fourcc: "TEST")
        }

        init(layout: VideoSampleLayout, frames: [(bytes: [UInt8], keyframe: Bool)]) {
            self.layout = layout
            self.frames = frames
        }

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            let start = MonotonicClock.nowNanoseconds()
            for (number, frame) in frames.enumerated() {
                let storage = frame.bytes.withUnsafeBytes { SampleStorage(copying: $0) }
                deliver(.video(VideoSampleBuffer(
                    storage: storage, layout: layout, width: 160, height: 120,
                    presentationTime: MediaTime(value: start + Int64(number) * 33_333_333, timescale: MonotonicClock.timescale),
                    duration: MediaTime(value: 1, timescale: 30), sequence: UInt64(number), isKeyframe: frame.keyframe)))
            }
            return .endOfInput
        }
    }

    enum Path: String, CaseIterable, CustomTestStringConvertible {
        case rawEncoded, mjpegCopied, mjpegEncoded, h264Copied, h264Encoded
        var testDescription: String { rawValue }

        var layout: VideoSampleLayout {
            switch self {
            case .rawEncoded: return .raw(.gray8, bytesPerRow: nil)
            case .mjpegCopied, .mjpegEncoded: return .compressed(codecName: "mjpeg")
            case .h264Copied, .h264Encoded: return .compressed(codecName: "h264")
            }
        }

        var copies: Bool { self == .mjpegCopied || self == .h264Copied }
    }

    /// 30 good frames for `path`: gray pictures, or ffmpeg's MJPEG or H.264
    /// (a keyframe every 10) of the same size.
    static func frames(for path: Path) throws -> [(bytes: [UInt8], keyframe: Bool)] {
        switch path {
        case .rawEncoded:
            return (0..<30).map { number in ([UInt8](repeating: UInt8(number * 8), count: 160 * 120), true) }
        case .mjpegCopied, .mjpegEncoded:
            return try encoded(["-c:v", "mjpeg", "-pix_fmt", "yuvj420p", "-f", "mjpeg"], name: "clip.mjpeg")
        case .h264Copied, .h264Encoded:
            return try encoded(["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-bf", "0", "-pix_fmt", "yuv420p", "-f", "h264"],
                               name: "clip.h264")
        }
    }

    static func encoded(_ arguments: [String], name: String) throws -> [(bytes: [UInt8], keyframe: Bool)] {
        let scratch = try WriterScratchDirectory()
        let file = scratch.file(name)
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30", "-frames:v", "30"]
            + arguments + [file]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)
        let reader = try CompressedSampleReader(path: file, mediaType: .video)
        var frames: [(bytes: [UInt8], keyframe: Bool)] = []
        while let sample = try reader.next() { frames.append((sample.data, sample.isKeyframe)) }
        return frames
    }

    final class Recorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        private let condition = NSCondition()
        private(set) var files: [RecordedFile] = []
        private(set) var reason: RecordingStopReason?
        private(set) var error: RecordingError?

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            condition.lock()
            files.append(file)
            condition.unlock()
        }

        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            condition.lock()
            self.reason = reason
            self.error = error
            condition.broadcast()
            condition.unlock()
        }

        func waitForEnd() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: 30)
            while reason == nil { if !condition.wait(until: deadline) { return false } }
            return true
        }
    }

    func record(_ frames: [(bytes: [UInt8], keyframe: Bool)], path: Path, to file: String,
                processor: (any VideoFrameProcessor)? = nil) throws -> (Recorder, MovieFileOutput) {
        let output = MovieFileOutput()
        if path.copies { output.settings.video = .passthrough }
        let recorder = Recorder()
        output.startRecording(to: file, recordingDelegate: recorder)
        let session = CaptureSession()
        let input = CaptureInput(source: ListCamera(layout: path.layout, frames: frames))
        input.videoFrameProcessor = processor
        session.addInput(input)
        session.addOutput(output)
        try session.startRunning()
        #expect(recorder.waitForEnd())
        session.stopRunning()
        return (recorder, output)
    }

    func packetCount(_ file: String) throws -> Int {
        let object = try FFprobe.json(["-select_streams", "v:0", "-show_entries", "packet=pts", file])
        return (object["packets"] as? [[String: Any]] ?? []).count
    }

    /// Good frames, with a damaged one in the middle: all but the damaged
    /// one are reported, and that is what the file holds.
    @Test(arguments: Path.allCases)
    func reportedFramesAreTheFilesFrames(path: Path) throws {
        var frames = try Self.frames(for: path)
        try #require(frames.count == 30)
        let damagedAt = 15
        switch path {
        case .rawEncoded: frames[damagedAt].bytes = [1, 2, 3]           // too short for a picture
        case .mjpegEncoded: frames[damagedAt].bytes = [0xFF, 0xD8, 0, 1, 2, 3]  // not a JPEG that decodes
        default: break                                                   // copied as it comes
        }
        let scratch = try WriterScratchDirectory()
        let file = scratch.file("out.mp4")
        let (recorder, output) = try record(frames, path: path, to: file)

        #expect(recorder.error == nil)
        let recorded = try #require(recorder.files.first)
        #expect(recorded.isComplete)
        let expected = path == .rawEncoded || path == .mjpegEncoded ? 29 : 30
        #expect(recorded.videoFrames == expected)
        #expect(output.statistics.videoFrames == expected)
        #expect(try packetCount(file) == expected)
        #expect(output.statistics.dropped == 30 - expected)
    }

    /// A camera's MJPEG or H.264 decoded for a text overlay, a damaged JPEG
    /// among them: the overlay leaves it out and the recording counts it as
    /// dropped; the file holds the frames reported, each with the text.
    @Test(arguments: [Path.mjpegEncoded, .h264Encoded])
    func anOverlaysDecodedFramesAreCounted(path: Path) throws {
        var frames = try Self.frames(for: path)
        try #require(frames.count == 30)
        if path == .mjpegEncoded { frames[15].bytes = [0xFF, 0xD8, 0, 1, 2, 3] }
        let scratch = try WriterScratchDirectory()
        let file = scratch.file("out.mp4")
        let overlay = TextOverlayRenderer(overlay: TextOverlay(text: "HONEST"), cameraName: "list")
        let (recorder, output) = try record(frames, path: path, to: file, processor: overlay)

        #expect(recorder.error == nil)
        let expected = path == .mjpegEncoded ? 29 : 30
        let recorded = try #require(recorder.files.first)
        #expect(recorded.isComplete && recorded.videoFrames == expected)
        #expect(try packetCount(file) == expected)
        #expect(output.statistics.dropped == 30 - expected)
        #expect(overlay.losses?.total == 30 - expected)
        // The box is drawn: the top left corner of the picture is the box's dark.
        let stats = try FFprobe.run(["-v", "error", "-f", "lavfi", "-i", "movie=\(file),crop=8:4:4:4,signalstats",
                                     "-show_entries", "frame_tags=lavfi.signalstats.YMAX", "-of", "csv=p=0"])
        let brightest = stats.output.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        #expect(brightest.count == expected && brightest.allSatisfy { $0 <= 24 }, "\(brightest)")
    }

    /// Frames taken and none written: an error naming the file, never a
    /// complete recording.
    @Test(arguments: Path.allCases)
    func takenFramesThatCannotBeWrittenAreAnError(path: Path) throws {
        var frames = try Self.frames(for: path)
        try #require(frames.count == 30)
        switch path {
        case .rawEncoded: frames = frames.map { _ in ([1, 2, 3], true) }
        case .mjpegEncoded: frames = frames.map { _ in ([0xFF, 0xD8, 0, 1, 2, 3], true) }
        case .mjpegCopied: frames = frames.map { _ in ([], true) }      // empty buffers: nothing to write
        case .h264Copied, .h264Encoded: frames = frames.filter { !$0.keyframe }  // no keyframe ever
        }
        let scratch = try WriterScratchDirectory()
        let file = scratch.file("out.mp4")
        let (recorder, output) = try record(frames, path: path, to: file)

        #expect(recorder.reason == .error)
        guard case .nothingWritten(let failed, _)? = recorder.error else {
            Issue.record("\(path): expected nothingWritten, got \(String(describing: recorder.error))")
            return
        }
        #expect(failed == file)
        #expect(recorder.files.allSatisfy { !$0.isComplete && $0.videoFrames == 0 })
        #expect(output.statistics.videoFrames == 0)
        #expect(output.statistics.dropped == frames.count)
        // A file the writer removed (no keyframe ever came) is listed nowhere, and its time is in no file.
        if path == .h264Copied || path == .h264Encoded {
            #expect(!FileManager.default.fileExists(atPath: file))
            #expect(output.statistics.files.isEmpty)
            #expect(output.statistics.duration == .zero, "\(path): \(output.statistics.duration)")
            #expect(recorder.files.allSatisfy { $0.duration == .zero })
        }
    }
}
