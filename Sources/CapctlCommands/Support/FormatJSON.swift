import CaptureKit

/// A frame interval as JSON: the exact fraction (seconds per frame) and the rate it gives.
struct FractionJSON: Encodable {
    let numerator: UInt32
    let denominator: UInt32
    let fps: Double?

    init(_ fraction: Fraction, withRate: Bool = true) {
        numerator = fraction.numerator
        denominator = fraction.denominator
        fps = withRate && fraction.numerator != 0 ? (fraction.framesPerSecond * 1000).rounded() / 1000 : nil
    }
}

struct DimensionsJSON: Encodable {
    let width: UInt32
    let height: UInt32

    init(_ dimensions: FrameDimensions) {
        width = dimensions.width
        height = dimensions.height
    }
}

/// Intervals: an array for a discrete list; an object with `type`, `min`,
/// `max` and `step` for a range; null when the driver does not enumerate them.
enum IntervalsJSON: Encodable {
    case list([FractionJSON])
    case range(type: String, min: FractionJSON, max: FractionJSON, step: FractionJSON)
    case unknown

    init(_ range: FrameIntervalRange) {
        switch range {
        case .discrete(let list): self = .list(list.map { FractionJSON($0) })
        case .stepwise(let min, let max, let step):
            self = .range(type: "stepwise", min: FractionJSON(min), max: FractionJSON(max), step: FractionJSON(step, withRate: false))
        case .continuous(let min, let max):
            self = .range(type: "continuous", min: FractionJSON(min), max: FractionJSON(max), step: FractionJSON(Fraction(1, 1), withRate: false))
        case .unknown: self = .unknown
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .list(let list):
            var container = encoder.singleValueContainer()
            try container.encode(list)
        case .range(let type, let min, let max, let step):
            var container = encoder.container(keyedBy: RangeKeys.self)
            try container.encode(type, forKey: .type)
            try container.encode(min, forKey: .min)
            try container.encode(max, forKey: .max)
            try container.encode(step, forKey: .step)
        case .unknown:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }

    enum RangeKeys: String, CodingKey { case type, min, max, step }
}

/// A frame size entry: `width`/`height` for a discrete size; `type`, `min`,
/// `max` and `step` for a range, whose intervals are those of its largest size.
struct SizeJSON: Encodable {
    let range: FrameSizeRange

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch range {
        case .discrete(let size, let intervals):
            try container.encode(size.width, forKey: .width)
            try container.encode(size.height, forKey: .height)
            try container.encode(IntervalsJSON(intervals), forKey: .intervals)
        case .stepwise(let min, let max, let step, let intervals):
            try container.encode("stepwise", forKey: .type)
            try container.encode(DimensionsJSON(min), forKey: .min)
            try container.encode(DimensionsJSON(max), forKey: .max)
            try container.encode(DimensionsJSON(step), forKey: .step)
            try container.encode(IntervalsJSON(intervals), forKey: .intervals)
        case .continuous(let min, let max, let intervals):
            try container.encode("continuous", forKey: .type)
            try container.encode(DimensionsJSON(min), forKey: .min)
            try container.encode(DimensionsJSON(max), forKey: .max)
            try container.encode(DimensionsJSON(FrameDimensions(width: 1, height: 1)), forKey: .step)
            try container.encode(IntervalsJSON(intervals), forKey: .intervals)
        }
    }

    enum Keys: String, CodingKey { case type, width, height, min, max, step, intervals }
}

struct VideoFormatJSON: Encodable {
    let fourcc: String
    let description: String
    let compressed: Bool
    let emulated: Bool
    let sizes: [SizeJSON]

    init(_ format: VideoFormat) {
        fourcc = format.fourcc.description
        description = format.description
        compressed = format.isCompressed
        emulated = format.isEmulated
        sizes = format.sizes.map(SizeJSON.init)
    }
}

struct ActiveFormatJSON: Encodable {
    let fourcc: String
    let width: UInt32
    let height: UInt32
    let interval: FractionJSON?

    init(_ active: ActiveVideoFormat) {
        fourcc = active.fourcc.description
        width = active.dimensions.width
        height = active.dimensions.height
        interval = active.frameInterval.map { FractionJSON($0) }
    }
}

struct RangeJSON: Encodable {
    let min: UInt32
    let max: UInt32
}

struct AudioFormatJSON: Encodable {
    let sampleFormat: String
    let rates: RangeJSON
    let standardRates: [UInt32]
    let channels: RangeJSON

    init(_ format: AudioFormat) {
        sampleFormat = format.sampleFormat
        rates = RangeJSON(min: format.rateRange.lowerBound, max: format.rateRange.upperBound)
        standardRates = format.standardRates
        channels = RangeJSON(min: format.channelRange.lowerBound, max: format.channelRange.upperBound)
    }
}

struct VideoFormatsDocument: Encodable {
    let device: DeviceJSON
    let active: ActiveFormatJSON?
    let formats: [VideoFormatJSON]
}

struct AudioFormatsDocument: Encodable {
    let device: DeviceJSON
    let formats: [AudioFormatJSON]
}
