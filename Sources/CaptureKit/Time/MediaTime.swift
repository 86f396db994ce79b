/// A point or span on a media timeline as a rational number of seconds,
/// `value / timescale`, the way CMTime represents time.
///
/// Besides numeric times there are three special values: `invalid` (no time
/// at all; it compares unequal to everything but itself and poisons
/// arithmetic), `positiveInfinity`/`negativeInfinity`, and `indefinite`
/// (a time that exists but is not known, such as the duration of a live
/// recording). Arithmetic never overflows silently: a result that cannot be
/// represented exactly is `invalid`, and the `checked` variants throw.
public struct MediaTime: Sendable, Hashable, CustomStringConvertible {
    /// What kind of time this is.
    public enum Kind: Sendable, Hashable {
        case numeric, invalid, indefinite, positiveInfinity, negativeInfinity
    }

    /// The numerator in units of `1/timescale` seconds.
    public let value: Int64
    /// Units per second; positive for numeric times.
    public let timescale: Int32
    public let kind: Kind

    /// A numeric time of `value / timescale` seconds; a timescale that is not
    /// positive gives `invalid`.
    public init(value: Int64, timescale: Int32) {
        if timescale > 0 {
            self.init(value: value, timescale: timescale, kind: .numeric)
        } else {
            self.init(value: 0, timescale: 0, kind: .invalid)
        }
    }

    /// The time nearest to `seconds` at `preferredTimescale`; `invalid` for NaN
    /// or a value outside the representable range.
    public init(seconds: Double, preferredTimescale: Int32) {
        let scaled = (seconds * Double(preferredTimescale)).rounded()
        guard preferredTimescale > 0, scaled.isFinite,
              scaled >= -9.2e18, scaled <= 9.2e18 else {
            self = seconds.isInfinite ? (seconds > 0 ? .positiveInfinity : .negativeInfinity) : .invalid
            return
        }
        self.init(value: Int64(scaled), timescale: preferredTimescale)
    }

    private init(value: Int64, timescale: Int32, kind: Kind) {
        self.value = value
        self.timescale = timescale
        self.kind = kind
    }

    public static let zero = MediaTime(value: 0, timescale: 1)
    public static let invalid = MediaTime(value: 0, timescale: 0, kind: .invalid)
    public static let indefinite = MediaTime(value: 0, timescale: 0, kind: .indefinite)
    public static let positiveInfinity = MediaTime(value: 0, timescale: 0, kind: .positiveInfinity)
    public static let negativeInfinity = MediaTime(value: 0, timescale: 0, kind: .negativeInfinity)

    public var isValid: Bool { kind != .invalid }
    public var isNumeric: Bool { kind == .numeric }
    public var isIndefinite: Bool { kind == .indefinite }

    /// The time in seconds; NaN for invalid and indefinite, ±infinity for the infinities.
    public var seconds: Double {
        switch kind {
        case .numeric: return Double(value) / Double(timescale)
        case .invalid, .indefinite: return .nan
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        }
    }

    public var description: String {
        switch kind {
        case .numeric: return "\(value)/\(timescale)"
        case .invalid: return "invalid"
        case .indefinite: return "indefinite"
        case .positiveInfinity: return "+infinity"
        case .negativeInfinity: return "-infinity"
        }
    }

    /// This time expressed in another timescale, rounding to the nearest
    /// unit (halves away from zero); `invalid` if it does not fit.
    public func converted(toTimescale newScale: Int32) -> MediaTime {
        guard isNumeric else { return self }
        guard newScale > 0 else { return .invalid }
        if newScale == timescale { return self }
        let product = Int128(value) * Int128(newScale)
        let divisor = Int128(timescale)
        var quotient = product / divisor
        let remainder = product % divisor
        if remainder.magnitude * 2 >= divisor.magnitude {
            quotient += product < 0 ? -1 : 1
        }
        guard let narrowed = Int64(exactly: quotient) else { return .invalid }
        return MediaTime(value: narrowed, timescale: newScale)
    }

    // MARK: Arithmetic

    /// Why a checked operation failed.
    public enum ArithmeticError: Error, Sendable, Equatable {
        /// The exact result does not fit in a 64-bit value over a 32-bit timescale.
        case overflow
        /// An operand was invalid, or the operation has no defined result (∞ − ∞).
        case undefined
    }

    /// `self + other`, exact, or an error when it cannot be represented.
    public func checkedAdding(_ other: MediaTime) throws(ArithmeticError) -> MediaTime {
        if let special = MediaTime.combineSpecial(self, other, negateOther: false) { return try special.get() }
        return try MediaTime.exactSum(self, other, sign: 1)
    }

    /// `self - other`, exact, or an error when it cannot be represented.
    public func checkedSubtracting(_ other: MediaTime) throws(ArithmeticError) -> MediaTime {
        if let special = MediaTime.combineSpecial(self, other, negateOther: true) { return try special.get() }
        return try MediaTime.exactSum(self, other, sign: -1)
    }

    /// `self * multiplier`, exact, or an error when it cannot be represented.
    public func checkedMultiplying(by multiplier: Int64) throws(ArithmeticError) -> MediaTime {
        switch kind {
        case .invalid: throw .undefined
        case .indefinite: return .indefinite
        case .positiveInfinity, .negativeInfinity:
            if multiplier == 0 { throw .undefined }
            return (multiplier > 0) == (kind == .positiveInfinity) ? .positiveInfinity : .negativeInfinity
        case .numeric:
            let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
            if overflow { throw .overflow }
            return MediaTime(value: product, timescale: timescale)
        }
    }

    /// The exact sum where one exists; when the common timescale would pass
    /// 32 bits (nanosecond stamps plus 1/48000 s units), the sum rounded to
    /// the finer of the two timescales, as CMTimeAdd does.
    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        do {
            return try lhs.checkedAdding(rhs)
        } catch .overflow {
            return roundedSum(lhs, rhs, sign: 1)
        } catch {
            return .invalid
        }
    }

    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        do {
            return try lhs.checkedSubtracting(rhs)
        } catch .overflow {
            return roundedSum(lhs, rhs, sign: -1)
        } catch {
            return .invalid
        }
    }

    private static func roundedSum(_ lhs: MediaTime, _ rhs: MediaTime, sign: Int64) -> MediaTime {
        let scale = max(lhs.timescale, rhs.timescale)
        let a = lhs.converted(toTimescale: scale)
        let b = rhs.converted(toTimescale: scale)
        guard a.isNumeric, b.isNumeric else { return .invalid }
        let (product, productOverflow) = b.value.multipliedReportingOverflow(by: sign)
        let (sum, sumOverflow) = a.value.addingReportingOverflow(product)
        return productOverflow || sumOverflow ? .invalid : MediaTime(value: sum, timescale: scale)
    }

    public static func * (lhs: MediaTime, rhs: Int64) -> MediaTime {
        (try? lhs.checkedMultiplying(by: rhs)) ?? .invalid
    }

    /// The result for operands that are not both numeric, or nil when they are.
    private static func combineSpecial(_ a: MediaTime, _ b: MediaTime, negateOther: Bool) -> Result<MediaTime, ArithmeticError>? {
        if a.isNumeric && b.isNumeric { return nil }
        if a.kind == .invalid || b.kind == .invalid { return .failure(.undefined) }
        let bKind: Kind
        switch b.kind {
        case .positiveInfinity where negateOther: bKind = .negativeInfinity
        case .negativeInfinity where negateOther: bKind = .positiveInfinity
        default: bKind = b.kind
        }
        let infinities: Set<Kind> = [.positiveInfinity, .negativeInfinity]
        if infinities.contains(a.kind) && infinities.contains(bKind) {
            return a.kind == bKind ? .success(a) : .failure(.undefined)
        }
        if infinities.contains(a.kind) { return .success(a) }
        if infinities.contains(bKind) { return .success(bKind == .positiveInfinity ? .positiveInfinity : .negativeInfinity) }
        return .success(.indefinite)
    }

    /// `a + sign * b` for numeric times, on the least common timescale.
    private static func exactSum(_ a: MediaTime, _ b: MediaTime, sign: Int128) throws(ArithmeticError) -> MediaTime {
        let scale = lcm(Int128(a.timescale), Int128(b.timescale))
        let sum = Int128(a.value) * (scale / Int128(a.timescale)) + sign * Int128(b.value) * (scale / Int128(b.timescale))
        if let narrowScale = Int32(exactly: scale), let narrowValue = Int64(exactly: sum) {
            return MediaTime(value: narrowValue, timescale: narrowScale)
        }
        // The common timescale is too fine; the sum may still be exact on a
        // coarser one (for example when it is a whole number of seconds).
        let divisor = gcd(sum.magnitude, UInt128(scale))
        let reducedScale = scale / Int128(divisor)
        let reducedValue = sum / Int128(divisor)
        guard let narrowScale = Int32(exactly: reducedScale), let narrowValue = Int64(exactly: reducedValue) else {
            throw .overflow
        }
        return MediaTime(value: narrowValue, timescale: narrowScale)
    }
}

extension MediaTime: Comparable {
    /// Order: negative infinity < numeric times < positive infinity <
    /// indefinite < invalid. Numeric times compare exactly across timescales.
    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        if lhs.isNumeric && rhs.isNumeric {
            return Int128(lhs.value) * Int128(rhs.timescale) < Int128(rhs.value) * Int128(lhs.timescale)
        }
        return lhs.rank < rhs.rank
    }

    /// Equal values compare equal across timescales (1/2 == 2/4).
    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        if lhs.isNumeric && rhs.isNumeric {
            return Int128(lhs.value) * Int128(rhs.timescale) == Int128(rhs.value) * Int128(lhs.timescale)
        }
        return lhs.kind == rhs.kind
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        if isNumeric {
            let divisor = gcd(UInt128(value.magnitude), UInt128(timescale))
            hasher.combine(Int128(value) / Int128(divisor))
            hasher.combine(Int128(timescale) / Int128(divisor))
        }
    }

    private var rank: Int {
        switch kind {
        case .negativeInfinity: return 0
        case .numeric: return 1
        case .positiveInfinity: return 2
        case .indefinite: return 3
        case .invalid: return 4
        }
    }
}

private func gcd(_ a: UInt128, _ b: UInt128) -> UInt128 {
    var (x, y) = (a, b)
    while y != 0 { (x, y) = (y, x % y) }
    return x == 0 ? 1 : x
}

private func lcm(_ a: Int128, _ b: Int128) -> Int128 {
    a / Int128(gcd(a.magnitude, b.magnitude)) * b
}
