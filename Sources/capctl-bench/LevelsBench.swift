import CaptureKit
import Dispatch
import Foundation

/// `capctl-bench levels SECONDS FORMAT`: the audio level meter's cost. Meters
/// SECONDS of 48 kHz stereo audio in 20 ms buffers (960 frames, as a
/// microphone delivers them) of FORMAT (s16, s32 or f32), with one interval
/// reader and one silence monitor attached as `record` attaches them, and
/// answers the CPU seconds it took. The buffers are made beforehand (50
/// of them, one second, used again in turn): only the meter is timed.
func runLevels(seconds: Int, format: AudioSampleFormat) -> Double {
    let rate = 48000, channels = 2, frames = 960
    let buffers = (0..<50).map { index in
        let storage = SampleStorage(count: frames * channels * format.bytesPerSample) { memory in
            for frame in 0..<frames {
                let value = 0.5 * sin(2 * Double.pi * 1000 * Double(index * frames + frame) / Double(rate))
                for channel in 0..<channels {
                    let offset = (frame * channels + channel) * format.bytesPerSample
                    switch format {
                    case .s16: memory.storeBytes(of: Int16(value * 32767), toByteOffset: offset, as: Int16.self)
                    case .s32: memory.storeBytes(of: Int32(value * 2_147_483_647), toByteOffset: offset, as: Int32.self)
                    default: memory.storeBytes(of: Float(value), toByteOffset: offset, as: Float.self)
                    }
                }
            }
        }
        return AudioSampleBuffer(storage: storage, format: format, channels: channels, sampleRate: rate, frameCount: frames,
                                 presentationTime: MediaTime(value: Int64(index) * 20_000_000, timescale: MonotonicClock.timescale))
    }
    let meter = AudioLevelMeter()
    let reader = meter.makeReader()
    let queue = DispatchQueue(label: "bench.silence")
    let monitor = meter.monitorSilence(AudioSilenceMonitor.Configuration(timeout: MediaTime(value: 10, timescale: 1)), queue: queue) { _ in }
    let start = cpuSeconds()
    for second in 0..<seconds {
        for buffer in buffers { meter.measure(buffer) }
        // A progress report a second.
        _ = reader.read()
    }
    let elapsed = cpuSeconds() - start
    withExtendedLifetime((reader, monitor)) {}
    return elapsed
}
