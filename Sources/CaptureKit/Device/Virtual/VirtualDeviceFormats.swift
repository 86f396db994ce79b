/// What a virtual device offers, in the shapes a real device's formats take,
/// so that `formats` lists it like any camera or microphone:
///
/// - `test-pattern`: the pixel formats it draws, every size from 16x16 to
///   7680x4320 (even sizes for the YUV formats), any rate from 0.1 to 1000 fps;
/// - `test-tone[:HZ][,…]`: signed 16-bit samples at the rates it is made at, 1 or 2 channels;
/// - `file:PATH`: the one format, size and rate of the file's video.
extension VirtualDevice {
    /// The formats a virtual camera offers. Throws for the tone (not a
    /// camera) and, for a file, what opening it throws (no such file, not media …).
    public func videoFormats() throws(CaptureError) -> [VideoFormat] {
        switch self {
        case .testPattern:
            let largest = FrameDimensions(width: UInt32(TestPatternSource.maximumSize.width), height: UInt32(TestPatternSource.maximumSize.height))
            let smallest = FrameDimensions(width: UInt32(TestPatternSource.minimumSize.width), height: UInt32(TestPatternSource.minimumSize.height))
            let rates = TestPatternSource.framesPerSecondRange
            let intervals = FrameIntervalRange.continuous(min: Fraction(framesPerSecond: rates.upperBound), max: Fraction(framesPerSecond: rates.lowerBound))
            return VirtualPixelFormat.drawable.map { entry in
                // The YUV formats subsample chroma, so their sizes are even.
                let sizes: FrameSizeRange = TestPatternRenderer(width: 1, height: 1, format: entry.format) == nil
                    ? .stepwise(min: smallest, max: largest, step: FrameDimensions(width: 2, height: 2), intervals: intervals)
                    : .continuous(min: smallest, max: largest, intervals: intervals)
                return VideoFormat(fourcc: FourCC(parsing: entry.fourcc) ?? FourCC(code: 0), description: "\(entry.description) (\(entry.name))",
                                   isCompressed: false, isEmulated: false, sizes: [sizes])
            }
        case .file(let path):
            let delivered = try Self.fileFormat(path)
            return [VideoFormat(fourcc: delivered.fourcc, description: delivered.description, isCompressed: delivered.isCompressed,
                                isEmulated: false, sizes: [.discrete(delivered.size, intervals: delivered.interval.map { .discrete([$0]) } ?? .unknown)])]
        case .testTone:
            throw notOfKind(.video)
        }
    }

    /// What a virtual camera delivers when nothing is asked: the test
    /// pattern's default (YU12 640x480 at 30 fps), or the file's format.
    public func activeVideoFormat() throws(CaptureError) -> ActiveVideoFormat {
        switch self {
        case .testPattern:
            let source = TestPatternSource()
            try source.open()
            defer { source.close() }
            guard let format = source.videoFormat else { throw .unsupported(specifier, reason: "the test pattern states no format") }
            return ActiveVideoFormat(fourcc: FourCC(parsing: format.fourcc) ?? FourCC(code: 0),
                                     dimensions: FrameDimensions(width: UInt32(format.width), height: UInt32(format.height)),
                                     frameInterval: format.frameDuration.flatMap(Fraction.init(exactly:)))
        case .file(let path):
            let delivered = try Self.fileFormat(path)
            return ActiveVideoFormat(fourcc: delivered.fourcc, dimensions: delivered.size, frameInterval: delivered.interval)
        case .testTone:
            throw notOfKind(.video)
        }
    }

    /// What a virtual microphone offers: the tone's one sample format, the
    /// rates it can be made and sampled at, and its channel counts.
    public func audioFormats() throws(CaptureError) -> [AudioFormat] {
        guard case .testTone(let frequency, _, _) = self else { throw notOfKind(.audio) }
        let tone = TestToneSource(frequency: frequency)
        let range = TestToneSource.sampleRateRange
        guard let lowest = range.first(where: tone.canBeSampled(atRate:)), let highest = range.last(where: tone.canBeSampled(atRate:)) else {
            return []
        }
        return [AudioFormat(
            // ALSA's name for the format, as microphones list theirs.
            sampleFormat: "S16_LE", rateRange: UInt32(lowest)...UInt32(highest),
            standardRates: AudioFormat.commonRates.filter { tone.canBeSampled(atRate: Int($0)) },
            channelRange: UInt32(TestToneSource.channelRange.lowerBound)...UInt32(TestToneSource.channelRange.upperBound))]
    }

    /// The format the frames of the file at `path` come in, as its source delivers them.
    private static func fileFormat(_ path: String) throws(CaptureError)
        -> (fourcc: FourCC, description: String, isCompressed: Bool, size: FrameDimensions, interval: Fraction?) {
        let source = FileCaptureSource(path: path)
        try source.open()
        defer { source.close() }
        guard let format = source.videoFormat else { throw .source(source.path, reason: "the file states no video format") }
        let fourcc: FourCC?
        var description: String
        let compressed: Bool
        switch format.layout {
        case .compressed(let codec):
            fourcc = V4L2PixelMapping.fourcc(forCodec: codec)
            description = "\(codec), as stored"
            compressed = true
        case .raw(let pixelFormat, _):
            fourcc = V4L2PixelMapping.fourcc(for: pixelFormat)
            description = pixelFormat.name
            compressed = false
        }
        let notes = [source.modelID, fourcc == nil ? "no V4L2 fourcc" : nil].compactMap { $0 }
        if !notes.isEmpty { description += " (\(notes.joined(separator: "; ")))" }
        return (fourcc ?? FourCC(code: 0), description, compressed,
                FrameDimensions(width: UInt32(format.width), height: UInt32(format.height)), format.frameDuration.flatMap(Fraction.init(exactly:)))
    }

    private func notOfKind(_ kind: MediaType) -> CaptureError {
        .device(.notACaptureDevice(specifier, reason: kind == .video ? "not a camera; it is a virtual microphone" : "not a microphone; it is a virtual camera"))
    }
}

extension Fraction {
    /// A frame interval from a media time, nil when it does not fit 32 bits or is not a positive number.
    init?(exactly time: MediaTime) {
        guard time.isNumeric, time > .zero, let numerator = UInt32(exactly: time.value), let denominator = UInt32(exactly: time.timescale) else {
            return nil
        }
        self.init(numerator, denominator)
    }
}
