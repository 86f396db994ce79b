import Foundation
import Testing
@testable import CaptureKit

/// Encode once, fan out: outputs of one session that record a camera with
/// the same settings take their frames from one encoder, each beginning at
/// a keyframe made for it; other settings get an encoder of their own.
@Suite struct SharedEncoderTests {
    typealias Camera = SessionLifecycleTests.TickingCamera
    typealias Recorder = SessionLifecycleTests.Recorder
    let lifecycle = SessionLifecycleTests()

    /// The video packets of a file: their bytes' MD5 and keyframe flags, in file order.
    func packets(_ path: String) throws -> [(hash: String, key: Bool)] {
        let object = try FFprobe.json(["-select_streams", "v:0", "-show_data_hash", "MD5", "-show_entries", "packet=data_hash,flags", path])
        return (object["packets"] as? [[String: Any]] ?? []).map { packet in
            (packet["data_hash"] as? String ?? "", (packet["flags"] as? String ?? "").hasPrefix("K"))
        }
    }

    /// Waits (up to 5 s) until `input` runs `count` encoders.
    func waitForEncoders(_ input: CaptureInput, _ count: Int) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 5)
        while input.compression.count != count {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        return true
    }

    @Test func twoOutputsWithTheSameSettingsShareOneEncoder() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        let input = CaptureInput(source: Camera())
        session.addInput(input)
        let first = MovieFileOutput(), second = MovieFileOutput()
        session.addOutput(first)
        session.addOutput(second)
        try session.startRunning()
        defer { session.stopRunning() }

        let firstRecorder = Recorder(), secondRecorder = Recorder()
        first.startRecording(to: scratch.file("first.mp4"), recordingDelegate: firstRecorder)
        #expect(lifecycle.waitForFrames(first, 10))
        // Joining mid-stream: the same encoder, which makes the second file a keyframe to begin at.
        second.startRecording(to: scratch.file("second.mkv"), recordingDelegate: secondRecorder)
        #expect(lifecycle.waitForFrames(second, 20))
        #expect(input.compression.count == 1)
        second.stopRecording()
        #expect(secondRecorder.waitForEnd())
        #expect(input.compression.count == 1, "the first recording still uses the encoder")
        #expect(lifecycle.waitForFrames(first, first.statistics.videoFrames + 5))
        first.stopRecording()
        #expect(firstRecorder.waitForEnd())
        #expect(waitForEncoders(input, 0), "the last recording to leave ends the encoder")

        let firstFile = try #require(firstRecorder.files.first), secondFile = try #require(secondRecorder.files.first)
        for file in [firstFile, secondFile] {
            #expect(file.isComplete)
            #expect(try decodesCleanly(file.path), "\(file.path)")
            #expect(try lifecycle.decodedFrames(file.path) == file.videoFrames, "\(file.path)")
        }
        #expect(first.statistics.dropped == 0 && second.statistics.dropped == 0)
        // The second file's frames are the first file's, byte for byte: one encoding.
        let all = try packets(firstFile.path), joined = try packets(secondFile.path)
        #expect(joined.count == secondFile.videoFrames)
        #expect(joined.first?.key == true)
        let start = try #require(all.firstIndex { $0.hash == joined.first?.hash })
        #expect(all.count >= start + joined.count)
        #expect(Array(all[start..<min(all.count, start + joined.count)].map(\.hash)) == joined.map(\.hash))
        // A keyframe was made for the second recording where the first had none of its own.
        #expect(all[start].key && start > 0)
    }

    @Test func outputsWithOtherSettingsGetTheirOwnEncoder() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        let input = CaptureInput(source: Camera())
        session.addInput(input)
        let plain = MovieFileOutput(), small = MovieFileOutput(), jpeg = MovieFileOutput()
        small.settings.videoBitRate = 100_000
        jpeg.settings.video = .encode(.mjpeg)
        for output in [plain, small, jpeg] { session.addOutput(output) }
        try session.startRunning()
        defer { session.stopRunning() }
        let recorders = [Recorder(), Recorder(), Recorder()]
        for (index, (output, name)) in zip([plain, small, jpeg], ["plain.mp4", "small.mp4", "jpeg.mkv"]).enumerated() {
            output.startRecording(to: scratch.file(name), recordingDelegate: recorders[index])
        }
        for output in [plain, small, jpeg] { #expect(lifecycle.waitForFrames(output, 10)) }
        #expect(input.compression.count == 3)
        for output in [plain, small, jpeg] { output.stopRecording() }
        for recorder in recorders {
            #expect(recorder.waitForEnd())
            let file = try #require(recorder.files.first)
            #expect(file.isComplete && recorder.error == nil)
            #expect(try lifecycle.decodedFrames(file.path) == file.videoFrames, "\(file.path)")
        }
        #expect(waitForEncoders(input, 0))
        #expect(try FFprobe.streams(scratch.file("jpeg.mkv")).first?["codec_name"] as? String == "mjpeg")
    }

    /// Switching files on a shared encoder: the next file begins at a
    /// keyframe made at the switch, and no frame is lost or doubled there.
    @Test func switchingFilesLosesNoFrame() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: Camera()))
        let output = MovieFileOutput()
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        let recorder = Recorder()
        output.startRecording(to: scratch.file("a.mp4"), recordingDelegate: recorder)
        #expect(lifecycle.waitForFrames(output, 12))
        output.startRecording(to: scratch.file("b.mp4"), recordingDelegate: recorder)
        #expect(lifecycle.waitForFrames(output, output.statistics.videoFrames + 12))
        output.stopRecording()
        #expect(recorder.waitForEnd())
        #expect(recorder.files.map { ($0.path as NSString).lastPathComponent } == ["a.mp4", "b.mp4"])
        for file in recorder.files {
            #expect(file.isComplete)
            #expect(try packets(file.path).first?.key == true)
            #expect(try decodesCleanly(file.path))
            // The camera ticks every 20 ms: a file holds exactly its frames' time.
            #expect(abs(file.duration.seconds - Double(file.videoFrames) * 0.02) < 0.001,
                    "\(file.path): \(file.duration.seconds) s for \(file.videoFrames) frames")
        }
        #expect(recorder.files.reduce(0) { $0 + $1.videoFrames } == output.statistics.videoFrames)
        #expect(output.statistics.dropped == 0)
    }

    /// Fragments begin at keyframes: a shared encoder makes one every fragment interval.
    @Test func fragmentsGetTheirKeyframes() throws {
        let scratch = try WriterScratchDirectory()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: Camera()))
        let output = MovieFileOutput()
        output.settings.fragmentInterval = MediaTime(value: 1, timescale: 5)
        output.settings.keepsMovieFragments = true
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        let recorder = Recorder()
        output.startRecording(to: scratch.file("fragments.mp4"), recordingDelegate: recorder)
        #expect(lifecycle.waitForFrames(output, 40))
        output.stopRecording()
        #expect(recorder.waitForEnd())
        let file = try #require(recorder.files.first)
        let keyframes = try FFprobe.frames(file.path).filter(\.key).map(\.time)
        #expect(keyframes.count >= 4, "keyframes at \(keyframes)")
        for (earlier, later) in zip(keyframes, keyframes.dropFirst()) {
            #expect(abs(later - earlier - 0.2) < 0.001, "keyframes at \(keyframes)")
        }
    }
}
