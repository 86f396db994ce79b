extension MediaTime {
    /// Parses a time as people write it: seconds (`2.5`, `90`), `mm:ss.fff`
    /// or `hh:mm:ss.fff`. Exact: `0.1` is 1/10 s, not the nearest double.
    /// Returns nil for anything else, including negative times.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), let last = parts.last else { return nil }
        // The seconds field: digits, optionally a point and up to 9 decimals.
        let pieces = last.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(pieces.count), let whole = pieces.first, !whole.isEmpty || pieces.count == 2,
              whole.allSatisfy(\.isASCII), whole.allSatisfy(\.isNumber) else { return nil }
        var fraction = pieces.count == 2 ? pieces[1] : ""
        guard fraction.count <= 9, fraction.allSatisfy(\.isASCII), fraction.allSatisfy(\.isNumber) else { return nil }
        if pieces.count == 2 && fraction.isEmpty && whole.isEmpty { return nil }
        var scale: Int64 = 1
        for _ in 0..<fraction.count { scale *= 10 }
        if fraction.isEmpty { fraction = "0" }
        guard let seconds = Int64(whole.isEmpty ? "0" : String(whole)), let fractional = Int64(fraction) else { return nil }
        var total = seconds
        var multiplier: Int64 = 60
        if parts.count > 1 {
            // Minutes and hours; in the longer forms seconds are below 60.
            guard seconds < 60 else { return nil }
            for field in parts.dropLast().reversed() {
                guard !field.isEmpty, field.allSatisfy(\.isASCII), field.allSatisfy(\.isNumber), let value = Int64(field) else { return nil }
                if multiplier == 60 && parts.count == 3 { guard value < 60 else { return nil } }
                let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
                guard !overflow else { return nil }
                let (sum, sumOverflow) = total.addingReportingOverflow(product)
                guard !sumOverflow else { return nil }
                total = sum
                multiplier *= 60
            }
        }
        let (scaled, overflow) = total.multipliedReportingOverflow(by: scale)
        guard !overflow, scaled <= Int64.max - fractional, let timescale = Int32(exactly: scale) else { return nil }
        self.init(value: scaled + (pieces.count == 2 ? fractional : 0), timescale: timescale)
    }
}
