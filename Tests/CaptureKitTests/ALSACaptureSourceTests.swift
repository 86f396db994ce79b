import Foundation
import Glibc
import Testing
@testable import CaptureKit

/// The ALSA capture source over a fake microphone that captures on a
/// script: the real capture loop and poll(), overruns and a vanishing
/// device included, without a sound card.
@Suite struct ALSACaptureSourceTests {
    typealias Step = FakeMicrophone.Step

    /// What a test keeps of a chunk: its time, its frames, and the number of its first frame (as the fake fills it).
    struct Chunk: Equatable {
        var time: Int64
        var frames: Int
        var first: Int16
        var last: Int16
    }

    /// Runs the capture loop on this thread until `frames` frames were
    /// delivered or it ended by itself; a watchdog stops it after 10 s.
    func capture(_ source: ALSACaptureSource, frames wanted: Int? = nil) -> (end: CaptureEnd, chunks: [Chunk]) {
        let stop = CaptureStopSignal()
        Thread { _ = stop.wait(untilNanoseconds: MonotonicClock.nowNanoseconds() + 10_000_000_000); stop.raise() }.start()
        defer { stop.raise() }
        var chunks: [Chunk] = []
        let end = source.run(stop: stop) { sample in
            guard let audio = sample.audioSample else { return }
            let samples = audio.bytes.bindMemory(to: Int16.self)
            chunks.append(Chunk(time: audio.presentationTime.value, frames: audio.frameCount,
                                first: samples.first ?? -1, last: samples.last ?? -1))
            if let wanted, chunks.reduce(0, { $0 + $1.frames }) >= wanted { stop.raise() }
        }
        return (end, chunks)
    }

    func opened(_ microphone: FakeMicrophone, request: CaptureAudioRequest = CaptureAudioRequest()) throws -> ALSACaptureSource {
        let source = ALSACaptureSource(device: microphone.device(), request: request)
        try source.open()
        return source
    }

    /// Nanoseconds of `frames` at 48 kHz.
    func duration(_ frames: Int) -> Int64 { Int64(frames) * 1_000_000_000 / 48000 }

    @Test func periodsAreReadWholeAndStampedByTheDevice() throws {
        let microphone = try FakeMicrophone(script: [.frames(960), .frames(1920), .frames(960)])
        let source = try opened(microphone, request: CaptureAudioRequest(channels: 1))
        #expect(source.audioFormat == CaptureAudioFormat(sampleFormat: .s16, sampleRate: 48000, channels: 1))
        #expect(source.periodFrames == 960)
        let (end, chunks) = capture(source, frames: 3840)
        #expect(end == .stopped)
        #expect(chunks.map(\.frames) == [960, 1920, 960])
        #expect(chunks.map(\.first) == [0, 960, 2880])
        #expect(chunks.map(\.last) == [959, 2879, 3839])
        // The device's stamps: each chunk starts where the one before ended.
        #expect(zip(chunks, chunks.dropFirst()).allSatisfy { $1.time - $0.time == duration($0.frames) })
        #expect(source.droppedByDevice == 0)
        source.close()
        #expect(microphone.isClosed)
    }

    /// An overrun reported by the read (-EPIPE) is recovered (prepare, start)
    /// and the frames it lost are counted; capture goes on after it.
    @Test(arguments: [true, false])
    func anOverrunIsRecoveredAndItsLossCounted(seenByPoll: Bool) throws {
        let lost = 4800
        let overrun: Step = seenByPoll ? .overrunSeenByPoll(lost: lost) : .overrun(lost: lost)
        let microphone = try FakeMicrophone(script: [.frames(1920), overrun, .frames(960), .frames(960)])
        let source = try opened(microphone, request: CaptureAudioRequest(channels: 2))
        let (end, chunks) = capture(source, frames: 1920 + 1920)
        #expect(end == .stopped)
        #expect(chunks.map(\.frames) == [1920, 960, 960])
        // The first frame after the overrun is the one the device captured after the lost ones.
        #expect(chunks.map(\.first) == [0, Int16(1920 + lost), Int16(1920 + lost + 960)])
        #expect(chunks[1].time - chunks[0].time == duration(1920 + lost))
        #expect(source.droppedByDevice == lost)
        let calls = microphone.calls
        if !seenByPoll { #expect(calls.contains("snd_pcm_readi")) }
        // Set up prepared; prepared again after the overrun, and started both times.
        #expect(calls.filter { $0 == "snd_pcm_prepare" }.count == 1)
        #expect(calls.filter { $0 == "snd_pcm_start" }.count == 2)
    }

    /// Without the device's stamps the gap is unknown: a whole buffer is the
    /// least an overrun loses, and that is what is counted.
    @Test func anOverrunWithoutDeviceStampsCountsABuffer() throws {
        let microphone = try FakeMicrophone(script: [.frames(960), .overrun(lost: 4800), .frames(960)])
        microphone.givesTimestamps = false
        let source = try opened(microphone)
        let (end, chunks) = capture(source, frames: 1920)
        #expect(end == .stopped)
        #expect(chunks.count == 2)
        #expect(source.droppedByDevice == source.bufferFrames)
        #expect(source.bufferFrames == 24000)
    }

    /// The device going away ends the source as lost, after what it
    /// captured before: seen as -ENODEV from the read, or as the state
    /// DISCONNECTED.
    @Test(arguments: [true, false])
    func aDeviceThatGoesAwayIsLost(seenByTheRead: Bool) throws {
        let microphone = try FakeMicrophone(script: [.frames(960), .frames(960), seenByTheRead ? .failRead(ENODEV) : .disconnect])
        let source = try opened(microphone)
        let (end, chunks) = capture(source)
        #expect(end == .deviceLost("hw:Fake,0"))
        #expect(chunks.map(\.frames) == [960, 960])
    }

    /// Any other failed read ends capture with an error naming the call.
    @Test func anotherReadErrorIsAFailureNamingTheCall() throws {
        let microphone = try FakeMicrophone(script: [.frames(960), .failRead(EIO)])
        let source = try opened(microphone)
        let (end, chunks) = capture(source)
        #expect(end == .failed(.io("hw:Fake,0", SystemCallError(call: "snd_pcm_readi", errno: EIO))))
        #expect(chunks.count == 1)
    }

    // MARK: Opening

    @Test func whatTheDeviceCannotDoIsRefusedWithTheNearest() throws {
        let microphone = try FakeMicrophone()
        #expect(throws: CaptureError.unsupported("hw:Fake,0", reason: "44100 Hz is not offered; nearest: 48000 Hz")) {
            try opened(microphone, request: CaptureAudioRequest(sampleRate: 44100))
        }
        #expect(throws: CaptureError.unsupported("hw:Fake,0", reason: "6 channels are not offered; nearest: 2")) {
            try opened(microphone, request: CaptureAudioRequest(channels: 6))
        }
        microphone.supportedFormats = [.u8]
        #expect(throws: CaptureError.unsupported("hw:Fake,0", reason: "takes none of the sample formats S16_LE, S32_LE, FLOAT_LE")) {
            try opened(microphone)
        }
        #expect(microphone.isClosed)
    }

    @Test func aMissingOrBusyDeviceSaysSo() throws {
        let microphone = try FakeMicrophone()
        var alsa = FakeALSA()
        alsa.openErrors["hw:Fake,0"] = EBUSY
        alsa.microphones["hw:Fake,0"] = microphone
        let busy = CaptureDevice(path: "hw:Fake,0", uniqueID: "fake", localizedName: "Fake", mediaType: .audio, driver: "fake", bus: "fake",
                                 modelID: nil, position: .unspecified, hasTorch: false, hasFlash: false, access: .authorized, backend: .alsa(alsa))
        #expect(throws: CaptureError.device(.busy("hw:Fake,0", reason: "device is busy: another process is using it"))) {
            try ALSACaptureSource(device: busy).open()
        }
    }
}
