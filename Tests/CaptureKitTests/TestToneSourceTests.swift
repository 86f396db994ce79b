import Foundation
import Testing
@testable import CaptureKit

/// The test tone microphone: format, stamps, frequency and unbroken phase.
@Suite struct TestToneSourceTests {
    /// What a test looks at in a buffer, so that it need not hold the buffer
    /// (a source that is not real time waits for its buffers to come back).
    struct BufferInfo {
        let format: AudioSampleFormat
        let channels: Int
        let sampleRate: Int
        let frameCount: Int
        let byteCount: Int
        let presentationTime: MediaTime
        let duration: MediaTime
    }

    /// `count` buffers of a tone, not in real time: the samples of channel 0 and the buffers.
    static func record(_ source: TestToneSource, buffers count: Int) throws -> (samples: [Int16], buffers: [BufferInfo]) {
        try source.open()
        var samples = [Int16]()
        var buffers = [BufferInfo]()
        captureSamples(source, count: count) { sample in
            let audio = sample.audioSample!
            buffers.append(BufferInfo(format: audio.format, channels: audio.channels, sampleRate: audio.sampleRate, frameCount: audio.frameCount,
                                      byteCount: audio.bytes.count, presentationTime: audio.presentationTime, duration: audio.duration))
            let values = audio.bytes.bindMemory(to: Int16.self)
            for frame in 0..<audio.frameCount {
                samples.append(values[frame * audio.channels])
                for channel in 1..<audio.channels { #expect(values[frame * audio.channels + channel] == values[frame * audio.channels]) }
            }
        }
        return (samples, buffers)
    }

    /// The magnitude of the signal's component at `frequency`, normalized to the amplitude of a sine.
    static func magnitude(_ samples: [Int16], at frequency: Double, rate: Int) -> Double {
        var real = 0.0, imaginary = 0.0
        for (index, value) in samples.enumerated() {
            let angle = 2 * Double.pi * frequency * Double(index) / Double(rate)
            real += Double(value) * cos(angle)
            imaginary -= Double(value) * sin(angle)
        }
        return 2 * (real * real + imaginary * imaginary).squareRoot() / Double(samples.count)
    }

    static func zeroCrossings(_ samples: [Int16]) -> Int {
        zip(samples, samples.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
    }

    @Test func defaultsToStereo48kHzSigned16() throws {
        let source = TestToneSource()
        try source.open()
        #expect(source.audioFormat == CaptureAudioFormat(sampleFormat: .s16, sampleRate: 48000, channels: 2))
        #expect(source.path == "test-tone")
        #expect(source.frequency == 440)
        #expect(source.videoFormat == nil)
    }

    @Test func oneSecondOf440HzIn20MillisecondBuffersOnOneClock() throws {
        let source = TestToneSource(realtime: false)
        let (samples, buffers) = try Self.record(source, buffers: 50)
        #expect(buffers.count == 50)
        let start = buffers[0].presentationTime
        for (index, buffer) in buffers.enumerated() {
            #expect(buffer.frameCount == 960)
            #expect(buffer.channels == 2 && buffer.sampleRate == 48000 && buffer.format == .s16)
            #expect(buffer.byteCount == 960 * 2 * 2)
            #expect(buffer.presentationTime.timescale == MonotonicClock.timescale)
            #expect(buffer.presentationTime.value - start.value == Int64(index) * 20_000_000)
            #expect(buffer.duration == MediaTime(value: 960, timescale: 48000))
        }
        #expect(samples.count == 48000)
        // 440 cycles: 880 zero crossings, give or take the ends.
        #expect(abs(Self.zeroCrossings(samples) - 880) <= 2)
        let amplitude = TestToneSource.defaultAmplitude
        #expect(abs(amplitude - 16422) < 1)
        #expect(abs(Self.magnitude(samples, at: 440, rate: 48000) - amplitude) < amplitude * 0.01)
        for other in [220.0, 400, 480, 880, 1000] {
            #expect(Self.magnitude(samples, at: other, rate: 48000) < amplitude * 0.01, "\(other) Hz")
        }
        #expect(samples.map { abs(Int($0)) }.max()! <= Int(amplitude.rounded()))
        #expect(samples.map { abs(Int($0)) }.max()! >= Int(amplitude) - 2)
    }

    @Test func thePhaseRunsOnAcrossBuffers() throws {
        let source = TestToneSource(frequency: 1000, request: CaptureAudioRequest(channels: 1), realtime: false)
        let (samples, buffers) = try Self.record(source, buffers: 10)
        #expect(buffers.allSatisfy { $0.channels == 1 })
        // Every sample, at the buffer edges too, is the sine at its frame's time.
        for (index, value) in samples.enumerated() {
            let expected = TestToneSource.defaultAmplitude * sin(2 * Double.pi * 1000 * Double(index) / 48000)
            if abs(Double(value) - expected) > 1 {
                Issue.record("sample \(index) is \(value), not \(expected)")
                break
            }
        }
    }

    @Test(arguments: [(880.0, 1, 48000), (100, 2, 44100), (3000, 1, 16000)])
    func otherFrequenciesRatesAndChannels(_ frequency: Double, _ channels: Int, _ rate: Int) throws {
        let source = TestToneSource(frequency: frequency, request: CaptureAudioRequest(sampleRate: rate, channels: channels), realtime: false)
        let (samples, buffers) = try Self.record(source, buffers: 25)
        #expect(buffers.allSatisfy { $0.channels == channels && $0.sampleRate == rate && $0.frameCount == rate / 50 })
        #expect(samples.count == rate / 2)
        #expect(abs(Self.zeroCrossings(samples) - Int(frequency)) <= 2)
        #expect(abs(Self.magnitude(samples, at: frequency, rate: rate) - TestToneSource.defaultAmplitude) < TestToneSource.defaultAmplitude * 0.02)
    }

    @Test func aLevelSetsThePeakAndSilenceIsZeros() throws {
        let quiet = TestToneSource(frequency: 1000, level: -20, realtime: false)
        let (samples, _) = try Self.record(quiet, buffers: 5)
        // 1000 Hz at 48 kHz reaches its crest on a sample: the peak is the level's amplitude.
        #expect(samples.map { abs(Int($0)) }.max() == Int((32767 * pow(10, -20.0 / 20)).rounded()))
        let silent = TestToneSource(level: -.infinity, realtime: false)
        #expect(try Self.record(silent, buffers: 5).samples.allSatisfy { $0 == 0 })
    }

    @Test func aDelayIsSilenceCountedInFramesBeforeTheTone() throws {
        // 0.51 s: in the middle of the 26th buffer.
        let source = TestToneSource(frequency: 1000, delay: 0.51, request: CaptureAudioRequest(channels: 2), realtime: false)
        let (samples, _) = try Self.record(source, buffers: 30)
        let start = 24480
        #expect(samples[..<start].allSatisfy { $0 == 0 })
        // From there on the sine, in phase with the clock as without a delay (its first sample at a crossing).
        for index in start..<samples.count {
            let expected = TestToneSource.defaultAmplitude * sin(2 * Double.pi * 1000 * Double(index) / 48000)
            if abs(Double(samples[index]) - expected) > 1 {
                Issue.record("sample \(index) is \(samples[index]), not \(expected)")
                break
            }
        }
        #expect(samples[(start + 12)...].contains { $0 != 0 })
    }

    @Test(arguments: [(440.0, CaptureAudioRequest(channels: 3)), (440, CaptureAudioRequest(channels: 0)),
                      (440, CaptureAudioRequest(sampleRate: 1000)), (440, CaptureAudioRequest(sampleRate: 44101)),
                      (15000, CaptureAudioRequest(sampleRate: 16000)), (0, CaptureAudioRequest()), (.nan, CaptureAudioRequest())])
    func impossibleTonesAreRefusedWithAReason(_ frequency: Double, _ request: CaptureAudioRequest) {
        let source = TestToneSource(frequency: frequency, request: request)
        #expect(throws: CaptureError.self) { try source.open() }
    }

    @Test func inRealTimeNoBufferComesBeforeItsLastFrame() throws {
        let source = TestToneSource()
        try source.open()
        var early = 0
        captureSamples(source, count: 3) { sample in
            let audio = sample.audioSample!
            if MonotonicClock.nowNanoseconds() < audio.presentationTime.value + 20_000_000 { early += 1 }
        }
        #expect(early == 0)
        #expect(source.droppedByDevice == 0)
    }

    @Test func bufferMemoryIsReusedOnceReleased() throws {
        let source = TestToneSource(realtime: false)
        try source.open()
        captureSamples(source, count: 500)
        #expect(source.allocatedBuffers <= 2)
    }
}
