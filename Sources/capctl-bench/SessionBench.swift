import CaptureKit
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A camera for the session benchmark: the prepared 1280x720 YUYV frames,
/// one every 1/30 s on the capture clock, `count` of them, then the end.
final class ReplayCamera: CaptureSource, Sendable {
    let mediaType = MediaType.video
    let path = "replay"
    let localizedName = "Replay"
    let modelID: String? = nil
    let audioFormat: CaptureAudioFormat? = nil
    let droppedByDevice = 0
    let frames: [[UInt8]]
    let count: Int

    init(frames: [[UInt8]], count: Int) {
        self.frames = frames
        self.count = count
    }

    var videoFormat: CaptureVideoFormat? {
        CaptureVideoFormat(layout: .raw(.yuyv422, bytesPerRow: nil), width: Int(width), height: Int(height),
                           frameDuration: MediaTime(value: 1, timescale: frameRate), fourcc: "YUYV")
    }

    func open() throws(CaptureError) {}
    func close() {}

    func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let interval = Int64(1_000_000_000 / frameRate)
        var next = MonotonicClock.nowNanoseconds()
        for index in 0..<count {
            if stop.wait(untilNanoseconds: next) { return .stopped }
            let storage = frames[index % frames.count].withUnsafeBytes { SampleStorage(copying: $0) }
            deliver(.video(VideoSampleBuffer(storage: storage, layout: .raw(.yuyv422, bytesPerRow: nil), width: Int(width),
                                             height: Int(height), presentationTime: MediaTime(value: next, timescale: MonotonicClock.timescale),
                                             duration: MediaTime(value: 1, timescale: frameRate), sequence: UInt64(index))))
            next += interval
        }
        return .endOfInput
    }
}

/// Hears one recording's end.
final class BenchRecorder: CaptureFileOutputRecordingDelegate, Sendable {
    private struct State {
        var ended = false
        var frames = 0
        var failure: RecordingError?
    }

    /// Signalled when the recording ends; `ended` is set holding it.
    private let condition = NSCondition()
    private let state = Mutex(State())

    var frames: Int { state.withLock { $0.frames } }
    var failure: RecordingError? { state.withLock { $0.failure } }

    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
        state.withLock { $0.frames += file.videoFrames }
    }

    func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
        condition.lock()
        state.withLock { state in
            state.ended = true
            if let error, !error.recordingSuccessfullyFinished { state.failure = error }
        }
        condition.broadcast()
        condition.unlock()
    }

    func waitForEnd() {
        condition.lock()
        while !state.withLock({ $0.ended }) { condition.wait() }
        condition.unlock()
    }
}

/// Records `count` live 720p frames with `outputs` MovieFileOutputs of the
/// same settings on one session (libx264 `veryfast`, the live default
/// tuning); returns the CPU seconds from the session's start to the last
/// file finished, the frames in each file and the frames dropped.
func runSession(outputs: Int, count: Int, directory: String) throws -> (cpu: Double, frames: [Int], dropped: Int) {
    let session = CaptureSession()
    session.addInput(CaptureInput(source: ReplayCamera(frames: makeFrames(), count: count)))
    var movieOutputs: [MovieFileOutput] = []
    for _ in 0..<outputs {
        let output = MovieFileOutput()
        output.settings.video = .encode(.h264)
        output.settings.encoderPreset = preset
        output.settings.videoEncoderOptions = ["threads": String(threads)]
        output.minFreeDiskSpaceLimit = 0
        session.addOutput(output)
        movieOutputs.append(output)
    }
    let recorders = movieOutputs.map { _ in BenchRecorder() }
    // Asked for before the session runs, every recording begins at its first frame.
    for (index, output) in movieOutputs.enumerated() {
        output.startRecording(to: "\(directory)/session-\(index + 1).mp4", recordingDelegate: recorders[index])
    }
    let start = cpuSeconds()
    try session.startRunning()
    for recorder in recorders { recorder.waitForEnd() }
    session.stopRunning()
    let cpu = cpuSeconds() - start
    if let failure = recorders.compactMap(\.failure).first { throw failure }
    return (cpu, recorders.map(\.frames), movieOutputs.reduce(0) { $0 + $1.statistics.dropped })
}
