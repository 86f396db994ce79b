/// One pixel format a camera offers, with every frame size it takes in that
/// format and the frame intervals for each size: the counterpart of an
/// AVCaptureDevice format, grouped the way V4L2 enumerates it.
public struct VideoFormat: Sendable, Hashable {
    public let fourcc: FourCC
    /// The driver's (or libv4l2's) human-readable name.
    public let description: String
    /// True for formats such as MJPEG and H.264 whose frames are compressed.
    public let isCompressed: Bool
    /// True for formats libv4l2 produces by converting another one.
    public let isEmulated: Bool
    public let sizes: [FrameSizeRange]

    public init(fourcc: FourCC, description: String, isCompressed: Bool, isEmulated: Bool, sizes: [FrameSizeRange]) {
        self.fourcc = fourcc
        self.description = description
        self.isCompressed = isCompressed
        self.isEmulated = isEmulated
        self.sizes = sizes
    }
}

/// A frame width and height in pixels.
public struct FrameDimensions: Sendable, Hashable, CustomStringConvertible {
    public let width: UInt32
    public let height: UInt32

    public init(width: UInt32, height: UInt32) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}

/// The frame sizes a format takes, as `VIDIOC_ENUM_FRAMESIZES` reports them.
public enum FrameSizeRange: Sendable, Hashable {
    /// One size, with its frame intervals.
    case discrete(FrameDimensions, intervals: FrameIntervalRange)
    /// Any size from `min` to `max` in steps of `step`; `intervals` are those
    /// the driver reports for the largest size.
    case stepwise(min: FrameDimensions, max: FrameDimensions, step: FrameDimensions, intervals: FrameIntervalRange)
    /// Any size from `min` to `max` (a stepwise range whose step is one
    /// pixel); `intervals` are those for the largest size.
    case continuous(min: FrameDimensions, max: FrameDimensions, intervals: FrameIntervalRange)

    public var intervals: FrameIntervalRange {
        switch self {
        case .discrete(_, let intervals), .stepwise(_, _, _, let intervals), .continuous(_, _, let intervals):
            return intervals
        }
    }

    /// Whether a frame of `size` is one this range includes.
    public func contains(_ size: FrameDimensions) -> Bool {
        switch self {
        case .discrete(let only, _):
            return only == size
        case .continuous(let min, let max, _):
            return (min.width...max.width).contains(size.width) && (min.height...max.height).contains(size.height)
        case .stepwise(let min, let max, let step, _):
            guard (min.width...max.width).contains(size.width), (min.height...max.height).contains(size.height) else { return false }
            return (step.width == 0 || (size.width - min.width) % step.width == 0)
                && (step.height == 0 || (size.height - min.height) % step.height == 0)
        }
    }
}

/// The frame intervals (seconds per frame) a format and size take, as
/// `VIDIOC_ENUM_FRAMEINTERVALS` reports them.
public enum FrameIntervalRange: Sendable, Hashable {
    /// A list of intervals, in the driver's order.
    case discrete([Fraction])
    /// Any interval from `min` to `max` in steps of `step`.
    case stepwise(min: Fraction, max: Fraction, step: Fraction)
    /// Any interval from `min` to `max`.
    case continuous(min: Fraction, max: Fraction)
    /// The driver does not enumerate intervals for this size.
    case unknown
}
