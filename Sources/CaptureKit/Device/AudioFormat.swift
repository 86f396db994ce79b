/// What an audio capture device accepts in one sample format: the
/// counterpart of a video format for microphones.
public struct AudioFormat: Sendable, Hashable {
    /// ALSA's name for the sample format, such as `S16_LE`.
    public let sampleFormat: String
    /// The lowest and highest sample rates the hardware accepts in this format.
    public let rateRange: ClosedRange<UInt32>
    /// The common rates (8 kHz to 384 kHz) within that range that the hardware really takes.
    public let standardRates: [UInt32]
    /// The fewest and most channels the hardware accepts in this format.
    public let channelRange: ClosedRange<UInt32>

    public init(sampleFormat: String, rateRange: ClosedRange<UInt32>, standardRates: [UInt32], channelRange: ClosedRange<UInt32>) {
        self.sampleFormat = sampleFormat
        self.rateRange = rateRange
        self.standardRates = standardRates
        self.channelRange = channelRange
    }

    /// The rates tried for `standardRates`.
    public static let commonRates: [UInt32] = [8000, 11025, 16000, 22050, 32000, 44100, 48000, 88200, 96000, 176400, 192000, 352800, 384000]
}
