/// An exact ratio of two unsigned integers, as V4L2 gives frame intervals
/// (seconds per frame) and pixel aspect.
public struct Fraction: Sendable, Hashable, CustomStringConvertible {
    public let numerator: UInt32
    public let denominator: UInt32

    public init(_ numerator: UInt32, _ denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The interval as a media time (seconds per frame); invalid when the
    /// denominator is zero or does not fit a timescale.
    public var mediaTime: MediaTime {
        guard let scale = Int32(exactly: denominator), scale > 0 else { return .invalid }
        return MediaTime(value: Int64(numerator), timescale: scale)
    }

    /// Frames per second when this is a frame interval (`denominator / numerator`).
    public var framesPerSecond: Double {
        numerator == 0 ? .infinity : Double(denominator) / Double(numerator)
    }

    public var description: String { "\(numerator)/\(denominator)" }
}
