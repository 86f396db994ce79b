/// One channel of an audio connection and its sound level, like
/// AVCaptureAudioChannel: read `averagePowerLevel` and `peakHoldLevel`
/// whenever a level is to be shown (a meter on screen polls them). The
/// levels are the input's (`CaptureInput.audioLevelMeter`), measured as its
/// samples are captured, whichever outputs take them.
public final class CaptureAudioChannel: Sendable {
    /// The meter of the input the connection carries.
    public let meter: AudioLevelMeter
    /// The channel's index in the input's audio (0 is the first, the left of a stereo pair).
    public let index: Int

    init(meter: AudioLevelMeter, index: Int) {
        self.meter = meter
        self.index = index
    }

    /// The channel's average power in dBFS, following a change within about
    /// 300 ms (see `AudioLevelMeter.averagePowerLevel(channel:)`); −160 for silence.
    public var averagePowerLevel: Float { meter.averagePowerLevel(channel: index) }

    /// The highest peak of about the last second, in dBFS (see
    /// `AudioLevelMeter.peakHoldLevel(channel:)`); −160 for silence.
    public var peakHoldLevel: Float { meter.peakHoldLevel(channel: index) }
}

extension CaptureConnection {
    /// The channels of an audio connection, one for each channel the input
    /// captures, each with its level (AVCaptureConnection's
    /// `audioChannels`). Empty for a video connection, and before the input
    /// has been opened or has delivered audio.
    public var audioChannels: [CaptureAudioChannel] {
        guard let meter = input.audioLevelMeter else { return [] }
        let count = input.source.audioFormat?.channels ?? meter.channelCount
        return (0..<count).map { CaptureAudioChannel(meter: meter, index: $0) }
    }
}
