import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// A recording's microphones: their levels between reports, and silence
/// told to the delegate as the capture clock measures it.
@Suite struct CaptureRecorderMicrophoneTests {
    /// The silence events the delegate heard: microphone number and event, in order.
    final class Heard: CaptureRecorderDelegate {
        private let heard = Mutex<[(Int, AudioSilenceMonitor.Event)]>([])
        var events: [(microphone: Int, event: AudioSilenceMonitor.Event)] { heard.withLock { $0 } }

        func recorder(_ recorder: CaptureRecorder, microphone number: Int, input: CaptureInput, silence event: AudioSilenceMonitor.Event) {
            heard.withLock { $0.append((number, event)) }
        }
    }

    @Test func silenceAndItsEndAreToldForEachMicrophone() throws {
        let scratch = try WriterScratchDirectory()
        var configuration = CaptureRecorderConfiguration(destination: scratch.file("watch.mp4"))
        configuration.maxDuration = MediaTime(value: 2, timescale: 1)
        configuration.silence = AudioSilenceMonitor.Configuration(timeout: MediaTime(value: 3, timescale: 10))
        let heard = Heard()
        let recorder = try CaptureRecorder(configuration, delegate: heard)
        let session = CaptureSession()
        session.addInput(try CaptureInput(camera: "test-pattern", request: CaptureVideoRequest(width: 160, height: 120)))
        session.addInput(try CaptureInput(microphone: "test-tone,level=silence"))
        session.addInput(try CaptureInput(microphone: "test-tone:1000,delay=1"))
        try recorder.start(on: session)
        #expect(recorder.microphones.map(\.source.path) == ["test-tone,level=silence", "test-tone:1000,delay=1"])
        #expect(recorder.waitUntilEnded(timeout: 20))
        let levels = recorder.readAudioLevels()
        recorder.finish()
        session.stopRunning()

        let events = heard.events
        #expect(events.map(\.microphone) == [1, 2, 2] || events.map(\.microphone) == [2, 1, 2], "\(events)")
        let first = try #require(events.first { $0.microphone == 1 }?.event)
        let second = events.filter { $0.microphone == 2 }.map(\.event)
        guard case .silent(let since) = first, second.count == 2, case .silent(let secondSince) = second[0],
              case .restored(let restoredSince, let at) = second[1] else {
            Issue.record("heard \(events)")
            return
        }
        // Both tones began together; the delayed one was silent for exactly its delay (50 buffers of 20 ms).
        #expect(abs(since.seconds - secondSince.seconds) < 0.05)
        #expect(restoredSince == secondSince)
        #expect(abs((at - secondSince).seconds - 1) < 1e-6)
        // The levels read since the start: silence reads the floor; the tone, once it came, -6 dBFS.
        #expect(levels.map(\.microphone) == [1, 2])
        #expect(levels[0].levels.peak == [AudioLevels.floor, AudioLevels.floor])
        #expect(levels[1].levels.peak.allSatisfy { abs($0 - -6) < 0.01 })
        #expect(levels[1].levels.frameCount >= 96000)
        #expect(recorder.microphones.isEmpty)
    }

    @Test func silenceDetectionWithoutAMicrophoneIsRefusedBeforeAFileIsMade() throws {
        let scratch = try WriterScratchDirectory()
        var configuration = CaptureRecorderConfiguration(destination: scratch.file("none.mp4"))
        configuration.silence = AudioSilenceMonitor.Configuration(timeout: MediaTime(value: 1, timescale: 1))
        let recorder = try CaptureRecorder(configuration)
        let session = CaptureSession()
        session.addInput(try CaptureInput(camera: "test-pattern", request: CaptureVideoRequest(width: 160, height: 120)))
        #expect(throws: CaptureRecorderError.self) { try recorder.start(on: session) }
        do { try recorder.start(on: session) } catch {
            guard case .recording(.silenceNeedsMicrophone) = error else { Issue.record("\(error)"); return }
        }
        #expect(!session.isRunning)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("none.mp4")))
    }
}
