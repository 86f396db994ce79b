import Dispatch
import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// The sound level meter: peak and RMS per channel in dBFS from every
/// sample format, intervals of its readers, the live levels connections
/// show, and the silence monitor on the capture clock.
@Suite struct AudioLevelMeterTests {
    /// `frames` frames of a `frequency` sine in each channel, of the channel's
    /// `amplitude` (1.0 is full scale: the format's largest value), stamped at `start` seconds.
    static func sine(_ format: AudioSampleFormat, amplitudes: [Double], frames: Int = 4800, rate: Int = 48000,
                     frequency: Double = 1000, start: Double = 0) -> AudioSampleBuffer {
        let channels = amplitudes.count
        let storage = SampleStorage(count: frames * channels * format.bytesPerSample) { memory in
            for frame in 0..<frames {
                let phase = sin(2 * Double.pi * frequency * Double(frame) / Double(rate))
                for (channel, amplitude) in amplitudes.enumerated() {
                    let value = amplitude * phase
                    let index = format.isPlanar ? channel * frames + frame : frame * channels + channel
                    switch format {
                    case .s16, .s16Planar: memory.storeBytes(of: Int16((value * 32767).rounded()), toByteOffset: index * 2, as: Int16.self)
                    case .s32, .s32Planar:
                        memory.storeBytes(of: Int32((value * 2_147_483_647).rounded()), toByteOffset: index * 4, as: Int32.self)
                    case .f32, .f32Planar: memory.storeBytes(of: Float(value), toByteOffset: index * 4, as: Float.self)
                    case .f64: memory.storeBytes(of: value, toByteOffset: index * 8, as: Double.self)
                    case .u8: memory.storeBytes(of: UInt8(128 + (value * 127).rounded()), toByteOffset: index, as: UInt8.self)
                    }
                }
            }
        }
        return AudioSampleBuffer(storage: storage, format: format, channels: channels, sampleRate: rate, frameCount: frames,
                                 presentationTime: MediaTime(seconds: start, preferredTimescale: MonotonicClock.timescale))
    }

    /// The levels of `buffers`, read once.
    static func levels(_ buffers: [AudioSampleBuffer]) -> AudioLevels {
        let meter = AudioLevelMeter()
        let reader = meter.makeReader()
        for buffer in buffers { meter.measure(buffer) }
        return reader.read()
    }

    static func near(_ values: [Float], _ expected: Double, within tolerance: Double = 0.01) -> Bool {
        !values.isEmpty && values.allSatisfy { abs(Double($0) - expected) <= tolerance }
    }

    @Test(arguments: [AudioSampleFormat.s16, .s32, .f32, .f64, .s16Planar, .s32Planar, .f32Planar])
    func aFullScaleSineHasAPeakOf0AndAnRMSOfMinus3Point01(format: AudioSampleFormat) {
        for channels in [1, 2] {
            let levels = Self.levels([Self.sine(format, amplitudes: Array(repeating: 1, count: channels))])
            #expect(levels.peak.count == channels && levels.rms.count == channels)
            #expect(Self.near(levels.peak, 0), "\(format) \(channels) channels: peak \(levels.peak)")
            #expect(Self.near(levels.rms, -3.0103), "\(format) \(channels) channels: RMS \(levels.rms)")
            #expect(levels.frameCount == 4800)
        }
    }

    @Test func eightBitSamplesAreCentredOn128() {
        // 127 steps of 128 each way: 0.07 dB below full scale.
        let levels = Self.levels([Self.sine(.u8, amplitudes: [1, 0.1])])
        #expect(Self.near([levels.peak[0]], 20 * log10(127.0 / 128), within: 0.01))
        #expect(Self.near([levels.rms[0]], 20 * log10(127.0 / 128) - 3.0103, within: 0.02))
        #expect(Self.near([levels.peak[1]], -20, within: 0.4))
    }

    @Test(arguments: [AudioSampleFormat.s16, .s32, .f32, .s16Planar, .f32Planar])
    func stereoChannelsAreMeasuredApart(format: AudioSampleFormat) {
        let levels = Self.levels([Self.sine(format, amplitudes: [1, 0.1])])
        #expect(Self.near([levels.peak[0]], 0) && Self.near([levels.rms[0]], -3.0103), "\(format): left \(levels.peak[0]) \(levels.rms[0])")
        #expect(Self.near([levels.peak[1]], -20) && Self.near([levels.rms[1]], -23.0103), "\(format): right \(levels.peak[1]) \(levels.rms[1])")
        // A silent channel reads the floor, beside one at -6 dBFS.
        let half = Self.levels([Self.sine(format, amplitudes: [0, 0.5])])
        #expect(half.peak[0] == AudioLevels.floor && half.rms[0] == AudioLevels.floor)
        #expect(Self.near([half.peak[1]], -6.0206) && Self.near([half.rms[1]], -9.0309))
    }

    @Test func readersAnswerTheirOwnIntervals() {
        let meter = AudioLevelMeter()
        let first = meter.makeReader()
        meter.measure(Self.sine(.s16, amplitudes: [1, 1], start: 0))
        let second = meter.makeReader()
        meter.measure(Self.sine(.s16, amplitudes: [0.1, 0.1], start: 0.1))
        // The first reader saw both buffers: the loud one's peak, the power of both together.
        let both = first.read()
        #expect(Self.near(both.peak, 0))
        #expect(Self.near(both.rms, 10 * log10((0.5 + 0.005) / 2)))
        #expect(both.frameCount == 9600)
        #expect(both.startTime == MediaTime(value: 0, timescale: MonotonicClock.timescale))
        #expect(both.endTime == MediaTime(value: 200_000_000, timescale: MonotonicClock.timescale))
        // The second only the quiet one, and reading one reader leaves the other's interval alone.
        #expect(Self.near(second.current.peak, -20))
        #expect(Self.near(second.read().rms, -23.0103))
        // A new interval: nothing measured yet.
        #expect(first.read() == AudioLevels(peak: [], rms: [], frameCount: 0, startTime: nil, endTime: nil))
        meter.measure(Self.sine(.s16, amplitudes: [0.5, 0.5], start: 0.2))
        #expect(Self.near(first.read().peak, -6.0206))
        #expect(Self.near(second.read().peak, -6.0206))
    }

    @Test func aReaderNobodyHoldsIsLetGo() {
        let meter = AudioLevelMeter()
        weak var dropped: AudioLevelReader?
        do {
            let reader = meter.makeReader()
            dropped = reader
        }
        meter.measure(Self.sine(.s16, amplitudes: [1], start: 0))
        #expect(dropped == nil)
    }

    @Test func liveLevelsAverageThePowerAndHoldThePeakForASecond() {
        let meter = AudioLevelMeter()
        #expect(meter.averagePowerLevel(channel: 0) == AudioLevels.floor && meter.peakHoldLevel(channel: 0) == AudioLevels.floor)
        // One loud 20 ms buffer, then a quiet tone.
        meter.measure(Self.sine(.s16, amplitudes: [1, 1], frames: 960, start: 0))
        #expect(Self.near([meter.averagePowerLevel(channel: 0)], -3.0103) && Self.near([meter.peakHoldLevel(channel: 1)], 0))
        var time = 0.02
        func quiet(until end: Double) {
            while time < end - 1e-9 {
                meter.measure(Self.sine(.s16, amplitudes: [0.1, 0.1], frames: 960, start: time))
                time += 0.02
            }
        }
        quiet(until: 0.1)
        // An average, not the last buffer's power: 80 ms after the step it is still on its way down.
        let falling = Double(meter.averagePowerLevel(channel: 0))
        #expect(falling < -6 && falling > -20, "\(falling)")
        quiet(until: 0.9)
        // The peak is held; the average has followed the quiet tone.
        #expect(Self.near([meter.peakHoldLevel(channel: 0)], 0))
        #expect(Self.near([meter.averagePowerLevel(channel: 0)], -23.0103, within: 0.1))
        quiet(until: 1.2)
        #expect(Self.near([meter.peakHoldLevel(channel: 0)], -20))
        #expect(Self.near([meter.averagePowerLevel(channel: 0)], -23.0103, within: 0.1))
        #expect(meter.averagePowerLevel(channel: 2) == AudioLevels.floor)
        #expect(meter.channelCount == 2)
    }

    @Test func connectionsShowTheirInputsLevelsAsAudioChannels() throws {
        let output = MovieFileOutput()
        let (session, _, tone) = CaptureConnectionTests.session(output)
        let audio = try #require(output.connection(with: .audio))
        #expect(output.connection(with: .video)?.audioChannels.isEmpty == true)
        #expect(audio.audioChannels.isEmpty)
        try session.startRunning()
        defer { session.stopRunning() }
        let meter = try #require(tone.audioLevelMeter)
        let deadline = Date().addingTimeInterval(10)
        // The default test tone: a sine at -6 dBFS, so an average power of -9.01 dBFS.
        while meter.measuredBufferCount < 5 && Date() < deadline { usleep(20_000) }
        let channels = audio.audioChannels
        #expect(channels.count == 2)
        for channel in channels {
            #expect(abs(Double(channel.averagePowerLevel) - -9.01) < 0.05, "\(channel.averagePowerLevel)")
            #expect(abs(Double(channel.peakHoldLevel) - -6.0) < 0.05, "\(channel.peakHoldLevel)")
        }
        #expect(session.inputs.first { $0.mediaType == .video }?.audioLevelMeter == nil)
    }
}

/// The silence monitor, fed buffers stamped on the capture clock.
@Suite struct AudioSilenceMonitorTests {
    /// What a monitor told, in order.
    final class Heard: Sendable {
        let events = Mutex<[AudioSilenceMonitor.Event]>([])
        let queue = DispatchQueue(label: "test.silence")
        /// The events, once every one told so far has been delivered.
        var all: [AudioSilenceMonitor.Event] {
            queue.sync {}
            return events.withLock { $0 }
        }
    }

    static func seconds(_ value: Double) -> MediaTime { MediaTime(seconds: value, preferredTimescale: MonotonicClock.timescale) }

    /// 20 ms buffers from `from` to `to` seconds, each channel at `amplitude` (0: digital silence).
    static func feed(_ meter: AudioLevelMeter, from: Double, to: Double, amplitude: Double) {
        var time = from
        while time < to - 1e-9 {
            meter.measure(AudioLevelMeterTests.sine(.s16, amplitudes: [amplitude, amplitude], frames: 960, start: time))
            time += 0.02
        }
    }

    func monitor(_ meter: AudioLevelMeter, threshold: Double = -60, timeout: Double) -> (AudioSilenceMonitor, Heard) {
        let heard = Heard()
        let monitor = meter.monitorSilence(AudioSilenceMonitor.Configuration(threshold: threshold, timeout: Self.seconds(timeout)),
                                           queue: heard.queue) { event in heard.events.withLock { $0.append(event) } }
        return (monitor, heard)
    }

    @Test func silenceIsToldAfterTheTimeoutAndTheReturnOfSoundWithHowLongItLasted() {
        let meter = AudioLevelMeter()
        let (monitor, heard) = monitor(meter, timeout: 1)
        Self.feed(meter, from: 10, to: 10.98, amplitude: 0)
        #expect(heard.all.isEmpty && !monitor.isSilent)
        Self.feed(meter, from: 10.98, to: 12.5, amplitude: 0)
        #expect(heard.all == [.silent(since: Self.seconds(10))])
        #expect(monitor.isSilent)
        Self.feed(meter, from: 12.5, to: 13, amplitude: 0.5)
        let events = heard.all
        #expect(events == [.silent(since: Self.seconds(10)), .restored(since: Self.seconds(10), at: Self.seconds(12.5))])
        #expect(abs((events.last?.silentFor.seconds ?? 0) - 2.5) < 1e-9)
        #expect(!monitor.isSilent)
    }

    @Test func silenceShorterThanTheTimeoutIsNotTold() {
        let meter = AudioLevelMeter()
        let (monitor, heard) = monitor(meter, timeout: 1)
        Self.feed(meter, from: 0, to: 0.9, amplitude: 0)
        Self.feed(meter, from: 0.9, to: 1.5, amplitude: 0.5)
        Self.feed(meter, from: 1.5, to: 2.4, amplitude: 0)
        Self.feed(meter, from: 2.4, to: 2.5, amplitude: 0.5)
        #expect(heard.all.isEmpty)
        // Then a silence that lasts.
        Self.feed(meter, from: 2.5, to: 3.6, amplitude: 0)
        #expect(heard.all == [.silent(since: Self.seconds(2.5))] && monitor.isSilent)
    }

    @Test func theThresholdIsAPeakLevel() {
        let meter = AudioLevelMeter()
        // A tone peaking at -70 dBFS is below -60; one at -50 is not.
        let (belowMonitor, below) = monitor(meter, threshold: -60, timeout: 0.5)
        let (aboveMonitor, above) = monitor(meter, threshold: -75, timeout: 0.5)
        Self.feed(meter, from: 0, to: 1, amplitude: pow(10, -70.0 / 20))
        #expect(below.all == [.silent(since: Self.seconds(0))] && belowMonitor.isSilent)
        #expect(above.all.isEmpty && !aboveMonitor.isSilent)
    }
}
