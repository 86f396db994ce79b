/// What one H.264 or HEVC access unit in Annex B form (start codes before
/// each NAL unit, as V4L2 cameras and raw `.h264` files deliver it) holds:
/// whether it starts a picture that decodes on its own, and the parameter
/// sets (SPS, PPS, and for HEVC VPS) it carries in band.
///
/// Cameras do not all say which frames are keyframes (v4l2loopback, for
/// one, never sets V4L2_BUF_FLAG_KEYFRAME), so the bitstream is asked. Only
/// the NAL headers before the first slice are read: parameter sets precede
/// the slices of their access unit.
struct AccessUnit: Equatable {
    /// The codecs whose frames are read this way.
    enum Codec: Equatable {
        case h264, hevc

        /// The codec for a libavcodec name, nil for codecs without inter
        /// frames that need no reading (MJPEG) or that are not Annex B.
        init?(codecName: String) {
            switch codecName {
            case "h264": self = .h264
            case "hevc": self = .hevc
            default: return nil
            }
        }
    }

    /// Whether the first slice is an IDR picture (H.264) or an IRAP picture
    /// (HEVC: IDR, BLA, CRA): decoding can start here.
    var startsRandomAccess = false
    /// Whether it holds a picture at all (a slice); false for a buffer of
    /// parameter sets (or SEI) alone.
    var hasPicture = false
    /// The byte ranges of its parameter-set NAL units, start codes included.
    var parameterSetRanges: [Range<Int>] = []

    var hasParameterSets: Bool { !parameterSetRanges.isEmpty }

    /// Reads the NAL unit headers of `bytes` up to the first slice.
    init(_ bytes: UnsafeRawBufferPointer, codec: Codec) {
        var cursor = Self.nextStartCode(in: bytes, from: 0)
        while let (start, payload) = cursor, payload < bytes.count {
            let kind = Self.kind(bytes[payload], codec)
            if case .slice(let randomAccess) = kind {
                // The slice's own bytes (most of the frame) are never scanned.
                hasPicture = true
                startsRandomAccess = randomAccess
                return
            }
            cursor = Self.nextStartCode(in: bytes, from: payload)
            if case .parameterSet = kind { parameterSetRanges.append(start..<(cursor?.start ?? bytes.count)) }
        }
    }

    /// For tests: a summary given directly.
    init(startsRandomAccess: Bool, hasPicture: Bool, parameterSetRanges: [Range<Int>]) {
        self.startsRandomAccess = startsRandomAccess
        self.hasPicture = hasPicture
        self.parameterSetRanges = parameterSetRanges
    }

    private enum Kind { case parameterSet, slice(randomAccess: Bool), other }

    private static func kind(_ header: UInt8, _ codec: Codec) -> Kind {
        switch codec {
        case .h264:
            switch header & 0x1F {
            case 7, 8: return .parameterSet              // SPS, PPS
            case 5: return .slice(randomAccess: true)    // IDR slice
            case 1...4: return .slice(randomAccess: false)
            default: return .other
            }
        case .hevc:
            let type = (header >> 1) & 0x3F
            switch type {
            case 32...34: return .parameterSet           // VPS, SPS, PPS
            case 16...21: return .slice(randomAccess: true)  // BLA, IDR, CRA
            case 0...31: return .slice(randomAccess: false)
            default: return .other
            }
        }
    }

    /// The next start code at or after `offset`: where it begins (a zero
    /// before `00 00 01` belongs to it) and where its NAL unit's header is.
    static func nextStartCode(in bytes: UnsafeRawBufferPointer, from offset: Int) -> (start: Int, payload: Int)? {
        var index = offset
        let count = bytes.count
        while index + 2 < count {
            // Skip fast to a position whose third byte could end a start code.
            let third = bytes[index + 2]
            if third > 1 { index += 3; continue }
            if third == 1, bytes[index] == 0, bytes[index + 1] == 0 {
                let start = index > offset && bytes[index - 1] == 0 ? index - 1 : index
                return (start, index + 3)
            }
            index += 1
        }
        return nil
    }
}

/// Keeps a camera's H.264/HEVC stream decodable from every keyframe on: the
/// latest parameter sets it sent are remembered, a buffer that carries only
/// parameter sets is held back and put in front of the next picture, and a
/// keyframe that comes without them gets them in front. Frames that cannot
/// start decoding (a keyframe before any parameter set was seen) are not
/// reported as keyframes.
///
/// Used on one capture thread; not shared.
struct InBandParameterSets {
    let codec: AccessUnit.Codec
    /// The latest parameter sets, Annex B, start codes included.
    private(set) var latest: [UInt8] = []
    /// Parameter sets that came in a buffer of their own, for the next picture.
    private var waiting: [UInt8] = []

    init(codec: AccessUnit.Codec) { self.codec = codec }

    /// What to do with a captured access unit.
    enum Disposition: Equatable {
        /// Not a picture (parameter sets or SEI alone): give the buffer back;
        /// what it held goes in front of the next picture.
        case absorbed
        /// A picture, delivered as it is; `isKeyframe` when decoding can start at it.
        case deliver(isKeyframe: Bool)
        /// A keyframe that must be delivered with `prefix` (parameter sets)
        /// in front of its bytes.
        case deliverWithPrefix([UInt8])
    }

    /// A captured access unit as it is to be delivered: its storage (a copy
    /// with parameter sets in front where a keyframe lacked them) and
    /// whether decoding can start at it; nil when it is no picture.
    mutating func deliverable(_ storage: SampleStorage) -> (storage: SampleStorage, isKeyframe: Bool)? {
        switch take(storage.bytes) {
        case .absorbed: return nil
        case .deliver(let isKeyframe): return (storage, isKeyframe)
        case .deliverWithPrefix(let prefix): return (SampleStorage(prefix: prefix, then: storage.bytes), true)
        }
    }

    mutating func take(_ bytes: UnsafeRawBufferPointer) -> Disposition {
        let unit = AccessUnit(bytes, codec: codec)
        if unit.hasParameterSets {
            var sets: [UInt8] = []
            for range in unit.parameterSetRanges { sets.append(contentsOf: bytes[range]) }
            latest = sets
        }
        guard unit.hasPicture else {
            if unit.hasParameterSets { waiting = latest }
            return .absorbed
        }
        defer { waiting = [] }
        guard unit.startsRandomAccess else { return .deliver(isKeyframe: false) }
        if unit.hasParameterSets { return .deliver(isKeyframe: true) }
        if !waiting.isEmpty { return .deliverWithPrefix(waiting) }
        if !latest.isEmpty { return .deliverWithPrefix(latest) }
        // An IDR without any parameter set seen yet: nothing can decode it.
        return .deliver(isKeyframe: false)
    }
}
