import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// Connections, as AVCaptureConnection: one per input and output, made by
/// the session; disabled, its input stays out of the recording; rotation
/// and mirroring reach the video track's display matrix.
@Suite struct CaptureConnectionTests {
    typealias Heard = RecordingDelegateContractTests.Heard

    static func session(_ output: CaptureOutput) -> (CaptureSession, CaptureInput, CaptureInput) {
        let session = CaptureSession()
        let camera = CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 320, height: 240, framesPerSecond: 30)))
        let tone = CaptureInput(source: TestToneSource())
        session.addInput(camera)
        session.addInput(tone)
        session.addOutput(output)
        return (session, camera, tone)
    }

    @Test func theSessionConnectsEachInputToEachOutput() {
        let movie = MovieFileOutput(), audio = AudioFileOutput()
        let (session, camera, tone) = Self.session(movie)
        session.addOutput(audio)
        #expect(movie.connections.map { $0.input } .count == 2)
        #expect(movie.connection(with: .video)?.input === camera)
        #expect(movie.connection(with: .audio)?.input === tone)
        // An audio file output takes audio only.
        #expect(audio.connections.count == 1 && audio.connection(with: .audio)?.input === tone)
        #expect(audio.connection(with: .video) == nil)
        // Settings stay with a connection while the session changes.
        movie.connection(with: .video)?.videoRotationAngle = 90
        session.removeInput(tone)
        #expect(movie.connections.count == 1)
        #expect(movie.connection(with: .video)?.videoRotationAngle == 90)
        #expect(movie.connection(with: .audio)?.isVideoMirroringSupported != true)
        // Right angles only, on video.
        let video = movie.connection(with: .video)!
        video.videoRotationAngle = 45
        #expect(video.videoRotationAngle == 90)
        video.videoRotationAngle = -90
        #expect(video.videoRotationAngle == 270)
    }

    @Test func aDisabledConnectionLeavesItsInputOut() throws {
        let scratch = try WriterScratchDirectory()
        let output = MovieFileOutput()
        output.maxRecordedDuration = MediaTime(value: 1, timescale: 2)
        let (session, _, _) = Self.session(output)
        output.connection(with: .audio)?.isEnabled = false
        try session.startRunning()
        defer { session.stopRunning() }
        let heard = Heard()
        output.startRecording(to: scratch.file("video-only.mp4"), recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1))
        let streams = try FFprobe.streams(scratch.file("video-only.mp4"))
        #expect(streams.map { $0["codec_type"] as? String } == ["video"])
        #expect(heard.files.first?.file.audioSamples == 0)
    }

    /// A video data output gets no frame through a disabled connection, and
    /// frames again once it is enabled.
    @Test func aDisabledConnectionStopsAVideoDataOutputsFrames() throws {
        let output = VideoDataOutput()
        let frames = Counter()
        output.setSampleBufferDelegate(frames, queue: nil)
        let (session, _, _) = Self.session(output)
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(eventually { frames.count >= 5 })
        let connection = try #require(output.connection(with: .video))
        connection.isEnabled = false
        // What was queued before is delivered; then nothing for a third of a second (10 frames at 30 fps).
        usleep(100_000)
        let stopped = frames.count
        usleep(330_000)
        #expect(frames.count == stopped, "\(frames.count - stopped) frames through a disabled connection")
        connection.isEnabled = true
        #expect(eventually { frames.count >= stopped + 5 })
    }

    final class Counter: VideoDataOutputSampleBufferDelegate, Sendable {
        private let calls = Mutex(0)
        var count: Int { calls.withLock { $0 } }
        func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from input: CaptureInput) {
            calls.withLock { $0 += 1 }
        }
    }

    @Test(arguments: [(90.0, false), (180.0, false), (0.0, true)])
    func rotationAndMirroringReachTheTrack(angle: Double, mirrored: Bool) throws {
        let scratch = try WriterScratchDirectory()
        let output = MovieFileOutput()
        output.maxRecordedDuration = MediaTime(value: 1, timescale: 2)
        let (session, _, _) = Self.session(output)
        let video = try #require(output.connection(with: .video))
        video.videoRotationAngle = angle
        video.isVideoMirrored = mirrored
        try session.startRunning()
        defer { session.stopRunning() }
        let heard = Heard()
        let path = scratch.file("turned.mp4")
        output.startRecording(to: path, recordingDelegate: heard)
        #expect(heard.wait(files: 1, endings: 1))
        let object = try FFprobe.json(["-select_streams", "v:0", "-show_entries", "stream_side_data", path])
        let stream = try #require((object["streams"] as? [[String: Any]])?.first)
        let sideData = (stream["side_data_list"] as? [[String: Any]]) ?? []
        let matrix = try #require(sideData.first { $0["side_data_type"] as? String == "Display Matrix" }, "\(object)")
        // ffprobe gives the angle counterclockwise: 90° clockwise reads as -90 (a phone's portrait video).
        let rotation = (matrix["rotation"] as? Int).map(Double.init) ?? (matrix["rotation"] as? Double) ?? .nan
        let turned = (rotation + angle).truncatingRemainder(dividingBy: 360)
        if !mirrored { #expect(abs(turned) < 0.01, "\(matrix)") }
        // Mirrored: the matrix's first entry is negative (x scaled by -1).
        let first = (matrix["displaymatrix"] as? String)?.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == ":" }).compactMap { Int($0) }.dropFirst().first
        if mirrored { #expect((first ?? 0) < 0, "\(matrix)") }
    }
}

/// Recommended writer settings for what an output's connections carry.
@Suite struct RecommendedSettingsTests {
    @Test func theyFollowTheCameraAndTheContainer() throws {
        let output = MovieFileOutput()
        let (session, _, _) = CaptureConnectionTests.session(output)
        try session.startRunning()
        defer { session.stopRunning() }
        let mp4 = try #require(output.recommendedVideoSettingsForAssetWriter(writingTo: .mp4))
        #expect(mp4.codec == .h264 && mp4.width == 320 && mp4.height == 240)
        #expect(mp4.expectedFrameDuration == MediaTime(value: 1, timescale: 30))
        #expect(output.recommendedVideoSettingsForAssetWriter(writingTo: .webm)?.codec == .vp9)
        #expect(output.recommendedAudioSettingsForAssetWriter(writingTo: .mp4)?.codec == .aac)
        #expect(output.recommendedAudioSettingsForAssetWriter(writingTo: .webm)?.codec == .opus)
        // An audio container recommends no video.
        #expect(output.recommendedVideoSettingsForAssetWriter(writingTo: .wav) == nil)
        // And an asset writer takes them as they are.
        let scratch = try WriterScratchDirectory()
        let writer = try AssetWriter(outputPath: scratch.file("recommended.mp4"))
        try writer.add(AssetWriterInput(outputSettings: .video(mp4)))
        try writer.startWriting()
        writer.cancelWriting()
    }

    /// A video data output's recommendation is for the frames it hands over: its videoSettings size.
    @Test func aVideoDataOutputsFollowItsVideoSettings() throws {
        let output = VideoDataOutput()
        let (session, _, _) = CaptureConnectionTests.session(output)
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(output.recommendedVideoSettingsForAssetWriter(writingTo: .mp4).map { [$0.width, $0.height] } == [320, 240])
        output.videoSettings = VideoDataOutput.Settings(pixelFormat: .bgra, width: 160, height: 120)
        let settings = try #require(output.recommendedVideoSettingsForAssetWriter(writingTo: .mp4))
        #expect(settings.width == 160 && settings.height == 120 && settings.expectedFrameDuration == MediaTime(value: 1, timescale: 30))
    }
}
