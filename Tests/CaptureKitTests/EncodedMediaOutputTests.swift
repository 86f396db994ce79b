@testable import CaptureKit
import Foundation
import Synchronization
import Testing

/// EncodedMediaOutput: a camera's H.264 from its shared encoder and a
/// microphone's Opus, encoded once for every receiver, only while one
/// subscribes; each receiver starts at a keyframe.
@Suite struct EncodedMediaOutputTests {
    /// What a receiver was handed.
    final class Receiver: EncodedMediaReceiver {
        struct Taken {
            var video: [(time: Int64, keyframe: Bool, startsWithStartCode: Bool)] = []
            var audio: [(time: Int64, duration: Int64, bytes: Int)] = []
            var ended = false
        }
        let taken = Mutex(Taken())

        func receiveVideo(_ accessUnit: UnsafeRawBufferPointer, captureTime: Int64, isKeyframe: Bool) {
            let annexB = accessUnit.count > 4 && accessUnit[0] == 0 && accessUnit[1] == 0 && (accessUnit[2] == 1 || (accessUnit[2] == 0 && accessUnit[3] == 1))
            taken.withLock { $0.video.append((captureTime, isKeyframe, annexB)) }
        }

        func receiveAudio(_ packet: UnsafeRawBufferPointer, captureTime: Int64, duration: Int64) {
            taken.withLock { $0.audio.append((captureTime, duration, packet.count)) }
        }

        func encodedMediaDidEnd() { taken.withLock { $0.ended = true } }

        func wait(seconds: Double, until done: (Taken) -> Bool) -> Taken {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                let now = taken.withLock { $0 }
                if done(now) { return now }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return taken.withLock { $0 }
        }
    }

    @Test func receiversShareOneEncoderStartAtAKeyframeAndHearTheMicrophone() throws {
        let session = CaptureSession()
        let camera = CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 320, height: 240, framesPerSecond: 30)))
        let microphone = CaptureInput(source: TestToneSource())
        let output = EncodedMediaOutput()
        session.addInput(camera)
        session.addInput(microphone)
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(camera.compression.count == 0, "nothing is encoded before anyone subscribes")

        let first = Receiver(), second = Receiver()
        let one = try output.subscribe(first, camera: camera, microphone: microphone)
        let got = first.wait(seconds: 20) { $0.video.count >= 20 && $0.audio.count >= 20 }
        let two = try output.subscribe(second, camera: camera, microphone: nil)
        let joined = second.wait(seconds: 20) { $0.video.count >= 10 }
        #expect(camera.compression.count == 1, "two receivers, one encoder")
        #expect(output.runningFeeds == (cameras: 1, microphones: 1))

        for taken in [got, joined] {
            #expect(taken.video.first?.keyframe == true, "a receiver starts at a keyframe")
            #expect(taken.video.allSatisfy { $0.startsWithStartCode }, "H.264 access units in Annex B")
            #expect(zip(taken.video, taken.video.dropFirst()).allSatisfy { $0.time < $1.time }, "in capture order")
        }
        #expect(joined.audio.isEmpty, "no microphone asked, no audio")
        // Opus: 20 ms packets, one after another on the capture clock.
        let audio = got.audio
        #expect(audio.allSatisfy { $0.duration == 20_000_000 && $0.bytes > 0 }, "\(audio.prefix(3))")
        #expect(zip(audio, audio.dropFirst()).allSatisfy { $1.time - $0.time == $0.duration }, "contiguous")
        // Audio and video on one clock: their capture times lie within a second of each other.
        if let video = got.video.first?.time, let sound = audio.first?.time { #expect(abs(video - sound) < 1_000_000_000) }

        one.cancel()
        #expect(output.runningFeeds == (cameras: 1, microphones: 0), "the microphone's encoder stops with its last listener")
        two.cancel()
        two.cancel()
        #expect(output.runningFeeds == (cameras: 0, microphones: 0))
        #expect(camera.compression.count == 0, "the last receiver to leave ends the encoder")
        #expect(output.subscriptionCount == 0)
    }

    @Test func aStoppedSessionEndsItsReceiversAndTakesNoMore() throws {
        let session = CaptureSession()
        let camera = CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120, framesPerSecond: 30)))
        let output = EncodedMediaOutput()
        session.addInput(camera)
        session.addOutput(output)
        try session.startRunning()
        let receiver = Receiver()
        _ = try output.subscribe(receiver, camera: camera, microphone: nil)
        _ = receiver.wait(seconds: 20) { !$0.video.isEmpty }
        session.stopRunning()
        #expect(receiver.wait(seconds: 10) { $0.ended }.ended, "the receiver hears the end")
        #expect(throws: WriterError.self) { _ = try output.subscribe(Receiver(), camera: camera, microphone: nil) }
    }
}
