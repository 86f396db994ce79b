/// The pixel format, frame size and frame interval chosen for a capture
/// request from what a camera offers.
package struct VideoFormatChoice: Sendable, Hashable {
    /// The offered format frames are captured in.
    package var format: VideoFormat
    package var size: FrameDimensions
    /// The frame interval to ask for (VIDIOC_S_PARM); nil when the driver
    /// does not enumerate intervals and no rate was asked for.
    package var frameInterval: Fraction?
    /// Whether the node must be opened through libv4l2: the format is one
    /// libv4l2 emulates, needs its conversion, or the request asked for it.
    package var throughLibv4l2: Bool
    /// The fourcc to ask VIDIOC_S_FMT for: the format's own, or libv4l2's
    /// conversion target for formats FFmpeg cannot read as they come.
    package var captureFourCC: FourCC

    package init(format: VideoFormat, size: FrameDimensions, frameInterval: Fraction?, throughLibv4l2: Bool, captureFourCC: FourCC) {
        self.format = format
        self.size = size
        self.frameInterval = frameInterval
        self.throughLibv4l2 = throughLibv4l2
        self.captureFourCC = captureFourCC
    }
}

/// Chooses a V4L2 format for a `CaptureVideoRequest`, the way
/// AVCaptureSession resolves a preset against a device's formats. Pure: it
/// looks only at the format list, so every rule is testable without a camera.
///
/// - An explicit size must be offered exactly, an explicit rate must be
///   offered for that size (within 0.5 %), an explicit pixel format must exist.
/// - Presets: fixed-size presets need their size; `high` takes the largest
///   size offered at 30 fps or more (else the largest); `medium` and `low`
///   the offered size nearest to 640x480 and 320x240; `photo` the largest.
///   No preset and no size means `high`.
/// - Without a pixel format, uncompressed formats FFmpeg reads come first,
///   then libv4l2's emulated ones, then compressed ones, then those that need
///   libv4l2's conversion (Bayer); a later kind is taken only when the size
///   or rate exists only there.
/// - Without a rate, the fastest offered for the chosen size.
enum VideoFormatSelection {
    /// How far an offered rate may be from the asked one and still match.
    static let rateTolerance = 0.005

    /// The choice for `request`, or `CaptureError.unsupported(device, …)`
    /// naming the nearest supported choice.
    static func choose(_ request: CaptureVideoRequest, from formats: [VideoFormat], device: String) throws(CaptureError) -> VideoFormatChoice {
        let candidates = try candidateFormats(request, formats, device: device)
        if let fps = request.framesPerSecond, !(fps > 0 && fps.isFinite) {
            throw .unsupported(device, reason: "the frame rate must be a positive number of frames per second")
        }
        let offer: Offer
        if let size = try exactSize(request, device: device) {
            offer = try exact(size, fps: request.framesPerSecond, in: candidates, device: device)
        } else {
            offer = try ranked(request.preset ?? .high, fps: request.framesPerSecond, in: candidates, device: device)
        }
        let format = offer.format
        let convert = V4L2PixelMapping.needsConversion(format.fourcc)
        return VideoFormatChoice(
            format: format, size: offer.size, frameInterval: offer.interval,
            throughLibv4l2: request.useLibv4l2 || format.isEmulated || convert,
            captureFourCC: convert ? V4L2PixelMapping.conversionTarget : format.fourcc)
    }

    /// Whether a device with these formats can capture at `preset`.
    static func supports(preset: SessionPreset, in formats: [VideoFormat]) -> Bool {
        (try? choose(CaptureVideoRequest(preset: preset), from: formats, device: "")) != nil
    }

    // MARK: Candidates

    /// The formats to choose among, in order of preference.
    private static func candidateFormats(_ request: CaptureVideoRequest, _ formats: [VideoFormat], device: String) throws(CaptureError) -> [VideoFormat] {
        let usable = formats.filter(isUsable)
        if let asked = request.pixelFormat {
            let named = formats.first { names($0.fourcc, asked, ignoringCase: false) }
                ?? formats.first { names($0.fourcc, asked, ignoringCase: true) }
            guard let named else {
                let offered = formats.isEmpty ? "none" : formats.map(\.fourcc.description).joined(separator: ", ")
                throw .unsupported(device, reason: "pixel format \(asked) is not offered; offered: \(offered)")
            }
            guard isUsable(named) else {
                let readable = usable.isEmpty ? "none" : usable.map(\.fourcc.description).joined(separator: ", ")
                throw .unsupported(device, reason: "pixel format \(named.fourcc) cannot be read (FFmpeg has no equivalent); readable: \(readable)")
            }
            return [named]
        }
        guard !usable.isEmpty else {
            if formats.isEmpty { throw .unsupported(device, reason: "the device offers no video formats") }
            let offered = formats.map(\.fourcc.description).joined(separator: ", ")
            throw .unsupported(device, reason: "none of the offered pixel formats can be read (\(offered))")
        }
        // A stable sort keeps the driver's order within each kind.
        return usable.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
    }

    /// Whether `asked` names `fourcc`: as printed (`YUYV`, `Y16`, `Y16 -BE`)
    /// or in any form `FourCC(parsing:)` reads (`Y16-BE`, `'Y16 -BE'`).
    static func names(_ fourcc: FourCC, _ asked: String, ignoringCase: Bool) -> Bool {
        guard ignoringCase else { return fourcc.description == asked || FourCC(parsing: asked) == fourcc }
        return FourCC(parsing: asked.uppercased()).map { $0 == FourCC(parsing: fourcc.description.uppercased()) } ?? false
    }

    private static func isUsable(_ format: VideoFormat) -> Bool {
        V4L2PixelMapping.isReadable(format.fourcc) || V4L2PixelMapping.needsConversion(format.fourcc)
    }

    private static func rank(_ format: VideoFormat) -> Int {
        if V4L2PixelMapping.needsConversion(format.fourcc) { return 3 }
        if V4L2PixelMapping.codecName(for: format.fourcc) != nil || format.isCompressed { return 2 }
        return format.isEmulated ? 1 : 0
    }

    // MARK: Sizes

    /// One way to capture: a format, a size it offers, and an interval.
    struct Offer {
        var format: VideoFormat
        var size: FrameDimensions
        var interval: Fraction?
        var rank: Int
    }

    private static func exactSize(_ request: CaptureVideoRequest, device: String) throws(CaptureError) -> FrameDimensions? {
        switch (request.width, request.height) {
        case let (width?, height?):
            guard let w = UInt32(exactly: width), let h = UInt32(exactly: height), w > 0, h > 0 else {
                throw .unsupported(device, reason: "\(width)x\(height) is not a frame size")
            }
            return FrameDimensions(width: w, height: h)
        case (nil, nil):
            guard let required = request.preset?.requiredSize else { return nil }
            return FrameDimensions(width: UInt32(required.width), height: UInt32(required.height))
        default:
            throw .unsupported(device, reason: "a frame size needs both a width and a height (such as 1280x720)")
        }
    }

    /// An exact size, in the most preferred format that offers it (and the rate).
    private static func exact(_ size: FrameDimensions, fps: Double?, in candidates: [VideoFormat], device: String) throws(CaptureError) -> Offer {
        let offering = candidates.compactMap { format in
            format.sizes.first { $0.contains(size) }.map { (format, $0.intervals) }
        }
        guard !offering.isEmpty else {
            throw .unsupported(device, reason: "\(size) is not offered in \(names(candidates)); nearest: \(nearestSizes(to: size, in: candidates))")
        }
        for (format, intervals) in offering {
            if let fps {
                if let interval = match(fps, in: intervals) {
                    return Offer(format: format, size: size, interval: interval, rank: rank(format))
                }
            } else {
                return Offer(format: format, size: size, interval: fastest(in: intervals), rank: rank(format))
            }
        }
        let fps = fps ?? 0
        if offering.count == 1 {
            throw .unsupported(device, reason: "\(rate(fps)) fps is not offered at \(size) \(offering[0].0.fourcc); offered: \(rates(offering[0].1)) fps")
        }
        let lists = offering.map { "\(rates($0.1)) fps (\($0.0.fourcc))" }.joined(separator: "; ")
        throw .unsupported(device, reason: "\(rate(fps)) fps is not offered at \(size) in \(names(offering.map(\.0))); offered: \(lists)")
    }

    /// A named level: every offered size is a candidate, ranked by the level's rule.
    private static func ranked(_ preset: SessionPreset, fps: Double?, in candidates: [VideoFormat], device: String) throws(CaptureError) -> Offer {
        var offers = points(in: candidates, target: preset.targetSize.map { FrameDimensions(width: UInt32($0.width), height: UInt32($0.height)) })
        if let fps {
            let all = offers
            offers = all.compactMap { offer in
                var matched = offer
                guard let intervals = intervals(of: offer), let interval = match(fps, in: intervals) else { return nil }
                matched.interval = interval
                return matched
            }
            guard !offers.isEmpty else {
                let fastestOffer = all.filter { $0.interval != nil }.max { ($0.interval!.framesPerSecond, area($0.size)) < ($1.interval!.framesPerSecond, area($1.size)) }
                let hint = fastestOffer.map { "; fastest: \(rate($0.interval!.framesPerSecond)) fps at \($0.size) (\($0.format.fourcc))" } ?? ""
                throw .unsupported(device, reason: "\(rate(fps)) fps is not offered at any size\(hint)")
            }
        }
        // Earlier candidates win ties: the more preferred kind of format.
        let best: Offer?
        switch preset {
        case .medium, .low:
            let target = preset.targetSize.map { FrameDimensions(width: UInt32($0.width), height: UInt32($0.height)) }!
            best = offers.min { (distance($0.size, target), -area($0.size), $0.rank) < (distance($1.size, target), -area($1.size), $1.rank) }
        case .high where fps == nil:
            let fast = offers.filter { ($0.interval?.framesPerSecond ?? 0) >= 30 * (1 - rateTolerance) }
            best = largest(fast.isEmpty ? offers : fast)
        default:
            best = largest(offers)
        }
        guard let best else { throw .unsupported(device, reason: "the device offers no frame sizes in \(names(candidates))") }
        return best
    }

    private static func largest(_ offers: [Offer]) -> Offer? {
        offers.min { (-area($0.size), -Int($0.size.width), $0.rank) < (-area($1.size), -Int($1.size.width), $1.rank) }
    }

    /// Every discrete size, and for each range its largest size and the size
    /// nearest `target`, with the fastest interval offered there.
    private static func points(in candidates: [VideoFormat], target: FrameDimensions?) -> [Offer] {
        var offers: [Offer] = []
        for format in candidates {
            for range in format.sizes {
                var sizes: [FrameDimensions]
                switch range {
                case .discrete(let size, _): sizes = [size]
                case .stepwise(_, let max, _, _), .continuous(_, let max, _): sizes = [max]
                }
                if let target, let near = nearest(to: target, in: range), near != sizes[0] { sizes.append(near) }
                for size in sizes {
                    offers.append(Offer(format: format, size: size, interval: fastest(in: range.intervals), rank: rank(format)))
                }
            }
        }
        return offers
    }

    private static func intervals(of offer: Offer) -> FrameIntervalRange? {
        offer.format.sizes.first { $0.contains(offer.size) }?.intervals
    }

    static func area(_ size: FrameDimensions) -> Int { Int(size.width) * Int(size.height) }

    static func distance(_ a: FrameDimensions, _ b: FrameDimensions) -> Int {
        abs(Int(a.width) - Int(b.width)) + abs(Int(a.height) - Int(b.height))
    }

    /// The size in `range` nearest `target`: clamped into the range and
    /// snapped to its step.
    static func nearest(to target: FrameDimensions, in range: FrameSizeRange) -> FrameDimensions? {
        func snap(_ value: UInt32, _ low: UInt32, _ high: UInt32, _ step: UInt32) -> UInt32 {
            let clamped = min(max(value, low), high)
            guard step > 1 else { return clamped }
            let steps = (Double(clamped - low) / Double(step)).rounded()
            var snapped = low + UInt32(steps) * step
            while snapped > high, snapped >= low + step { snapped -= step }
            return snapped
        }
        switch range {
        case .discrete(let size, _):
            return size
        case .continuous(let low, let high, _):
            return FrameDimensions(width: snap(target.width, low.width, high.width, 1), height: snap(target.height, low.height, high.height, 1))
        case .stepwise(let low, let high, let step, _):
            return FrameDimensions(width: snap(target.width, low.width, high.width, step.width),
                                   height: snap(target.height, low.height, high.height, step.height))
        }
    }

    /// "1280x720 (also 640x480, 1920x1080, …)": offered sizes by distance.
    private static func nearestSizes(to size: FrameDimensions, in candidates: [VideoFormat]) -> String {
        var seen = Set<FrameDimensions>()
        let sizes = candidates.flatMap(\.sizes).compactMap { nearest(to: size, in: $0) }
            .sorted { (distance($0, size), -area($0)) < (distance($1, size), -area($1)) }
            .filter { seen.insert($0).inserted }
        guard let first = sizes.first else { return "none" }
        let others = sizes.dropFirst()
        guard !others.isEmpty else { return "\(first)" }
        let shown = others.prefix(3).map(\.description).joined(separator: ", ")
        return "\(first) (also \(shown)\(others.count > 3 ? ", …" : ""))"
    }

    private static func names(_ formats: [VideoFormat]) -> String {
        let all = formats.map(\.fourcc.description)
        guard all.count > 1 else { return all.first ?? "no format" }
        return all.dropLast().joined(separator: ", ") + " or " + all.last!
    }

    // MARK: Rates

    /// The interval in `range` for `fps`, or nil when it is not offered. A
    /// driver that does not enumerate intervals is taken at its word later
    /// (VIDIOC_S_PARM reports what it really set).
    static func match(_ fps: Double, in range: FrameIntervalRange) -> Fraction? {
        func close(_ offered: Double) -> Bool { abs(offered - fps) <= fps * rateTolerance }
        switch range {
        case .discrete(let list):
            return list.first { close($0.framesPerSecond) }
        case .continuous(let fastest, let slowest):
            guard fps <= fastest.framesPerSecond * (1 + rateTolerance), fps >= slowest.framesPerSecond * (1 - rateTolerance) else { return nil }
            return Fraction(framesPerSecond: fps)
        case .stepwise(let fastest, let slowest, let step):
            let low = seconds(fastest), high = seconds(slowest), stride = seconds(step)
            guard stride > 0 else { return close(fastest.framesPerSecond) ? fastest : nil }
            let k = ((1 / fps - low) / stride).rounded()
            guard k >= 0, low + k * stride <= high * (1 + 1e-9), let interval = fastest.adding(step, times: UInt64(k)),
                  close(interval.framesPerSecond) else { return nil }
            return interval
        case .unknown:
            return Fraction(framesPerSecond: fps)
        }
    }

    /// The shortest interval offered, or nil when the driver does not say.
    static func fastest(in range: FrameIntervalRange) -> Fraction? {
        switch range {
        case .discrete(let list): return list.filter { $0.numerator > 0 }.min { seconds($0) < seconds($1) }
        case .continuous(let fastest, _), .stepwise(let fastest, _, _): return fastest
        case .unknown: return nil
        }
    }

    private static func seconds(_ fraction: Fraction) -> Double {
        fraction.denominator == 0 ? .infinity : Double(fraction.numerator) / Double(fraction.denominator)
    }

    /// "30, 25, 15" or "1 to 60": the rates a range offers, for messages.
    static func rates(_ range: FrameIntervalRange) -> String {
        switch range {
        case .discrete(let list):
            var seen = Set<String>()
            return list.map(\.framesPerSecond).sorted(by: >).map(rate).filter { seen.insert($0).inserted }.joined(separator: ", ")
        case .continuous(let fastest, let slowest), .stepwise(let fastest, let slowest, _):
            return "\(rate(slowest.framesPerSecond)) to \(rate(fastest.framesPerSecond))"
        case .unknown:
            return "any"
        }
    }

    /// A rate for messages: "30", "29.97", "7.5".
    static func rate(_ fps: Double) -> String {
        let rounded = (fps * 100).rounded() / 100
        if rounded == rounded.rounded(), abs(rounded) < 1e9 { return String(Int(rounded)) }
        return String(rounded)
    }
}

extension Fraction {
    /// The frame interval of `fps` frames per second, exact for whole rates
    /// and for the NTSC family (29.97 → 1001/30000).
    init(framesPerSecond fps: Double) {
        if abs(fps - fps.rounded()) < 1e-6, fps >= 1, fps < Double(UInt32.max) {
            self.init(1, UInt32(fps.rounded()))
            return
        }
        let ntsc = fps * 1.001
        if abs(ntsc - ntsc.rounded()) < 1e-3, ntsc * 1000 < Double(UInt32.max) {
            self.init(1001, UInt32(ntsc.rounded()) * 1000)
            return
        }
        let milli = UInt64(max(1, min((fps * 1000).rounded(), Double(UInt32.max))))
        let divisor = gcd(1000, milli)
        self.init(UInt32(1000 / divisor), UInt32(milli / divisor))
    }

    /// `self + step × times`, reduced; nil when it does not fit 32 bits.
    func adding(_ step: Fraction, times: UInt64) -> Fraction? {
        let denominator = UInt64(self.denominator) * UInt64(step.denominator)
        let (scaled, overflow) = UInt64(step.numerator).multipliedReportingOverflow(by: times)
        guard denominator > 0, !overflow else { return nil }
        let numerator = UInt64(self.numerator) * UInt64(step.denominator) + scaled * UInt64(self.denominator)
        let divisor = gcd(numerator, denominator)
        guard let n = UInt32(exactly: numerator / divisor), let d = UInt32(exactly: denominator / divisor) else { return nil }
        return Fraction(n, d)
    }
}

private func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return max(a, 1)
}

extension Array where Element == VideoFormat {
    /// Whether a camera offering these formats can capture at `preset`.
    public func supports(preset: SessionPreset) -> Bool {
        VideoFormatSelection.supports(preset: preset, in: self)
    }
}
