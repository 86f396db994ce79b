/// What a file's name holds, read back through the template that could
/// have produced it: its number, its camera, and the time of its fields.
public struct FileNameTemplateMatch: Sendable, Hashable {
    /// Its `%n`; for a template without `%n`, the `-N` added to files after
    /// the first (1 for a name without it).
    public var number: Int
    /// Its `%c`, when the template has one.
    public var camera: Int?
    /// The time its strftime fields hold, most significant first: the
    /// seconds of `%s` (when the template has it), then year, month, day of
    /// the month, day of the year, hour (0-23), minute, second (0 where the
    /// template has no field for it). Names of one template compare by it.
    public var timeKey: [Int]
}

/// Reading names back through a template: which files of a folder the
/// template could have produced (strictly: each field as strftime writes
/// it in the C locale, each number as `%n` pads it), for a recording's
/// retention and its numbering.
extension FileNameTemplate {
    /// The template split at its last '/': the folder part (with its '/';
    /// empty for none) and the file-name part. nil when the folder part
    /// holds a field: then the files are not in one folder.
    var folderPart: (prefix: String, name: String)? {
        guard let slash = pattern.lastIndex(of: "/") else { return ("", pattern) }
        let prefix = String(pattern[...slash])
        guard !prefix.contains("%") else { return nil }
        return (prefix, String(pattern[pattern.index(after: slash)...]))
    }

    /// The folder the files are in, as opendir(3) takes it ("." for none).
    var folder: String? {
        guard let prefix = folderPart?.prefix else { return nil }
        return prefix.isEmpty ? "." : prefix
    }

    /// Reads `name` (a file's name, without its folder) as one this
    /// template could have produced; nil when it could not have. A template
    /// without `%n` names the files after the first with `-N` before the
    /// extension (`FileNameTemplate.numbered`): such names match too.
    public func match(fileName name: String) -> FileNameTemplateMatch? {
        guard let part = folderPart?.name else { return nil }
        let tokens = Self.tokens(part)
        let bytes = Array(name.utf8)
        if let found = Self.match(tokens, bytes) { return found.result }
        guard !hasCounter, let (stripped, number) = Self.strippingNumberSuffix(bytes, hasFolder: !(folderPart?.prefix.isEmpty ?? true)),
              var found = Self.match(tokens, stripped) else { return nil }
        found.number = number
        return found.result
    }

    // MARK: Tokens

    /// One piece of a name: a byte as it is, a number field, or a strftime
    /// field (composite ones such as %F spelled out into their parts).
    enum Token: Equatable {
        case literal(UInt8)
        case counter(width: Int)
        case camera(width: Int)
        case time(UInt8)
    }

    static func tokens(_ pattern: String) -> [Token] {
        // strftime's composite fields in the C locale.
        let composites: [UInt8: String] = [
            UInt8(ascii: "F"): "%Y-%m-%d", UInt8(ascii: "T"): "%H:%M:%S", UInt8(ascii: "R"): "%H:%M",
            UInt8(ascii: "D"): "%m/%d/%y", UInt8(ascii: "x"): "%m/%d/%y", UInt8(ascii: "X"): "%H:%M:%S",
            UInt8(ascii: "r"): "%I:%M:%S %p", UInt8(ascii: "h"): "%b",
        ]
        var result: [Token] = []
        let bytes = Array(pattern.utf8)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%") else {
                result.append(.literal(bytes[index]))
                index += 1
                continue
            }
            var next = index + 1
            var width = 0
            while next < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[next]) {
                width = width * 10 + Int(bytes[next] - UInt8(ascii: "0"))
                next += 1
            }
            // The initializer checked that every field is complete.
            guard next < bytes.count else { break }
            let field = bytes[next]
            switch field {
            case UInt8(ascii: "n"): result.append(.counter(width: width))
            case UInt8(ascii: "c"): result.append(.camera(width: width))
            case UInt8(ascii: "%"): result.append(.literal(field))
            default:
                if let spelled = composites[field] { result += tokens(spelled) } else { result.append(.time(field)) }
            }
            index = next + 1
        }
        return result
    }

    // MARK: Matching

    /// The fields read so far.
    struct Fields {
        var number: Int?
        var camera: Int?
        var values: [UInt8: Int] = [:]

        var result: FileNameTemplateMatch {
            FileNameTemplateMatch(number: number ?? 1, camera: camera, timeKey: timeKey)
        }

        private func value(_ field: Character) -> Int? { values[UInt8(ascii: field.unicodeScalars.first!)] }

        /// The time, most significant first (see `FileNameTemplateMatch.timeKey`).
        var timeKey: [Int] {
            guard !values.isEmpty else { return [] }
            var year = value("Y") ?? value("G")
            if year == nil, let short = value("y") {
                year = value("C").map { $0 * 100 + short } ?? (short < 69 ? 2000 + short : 1900 + short)
            }
            let month = value("m") ?? value("b").map { $0 + 1 } ?? value("B").map { $0 + 1 }
            var hour = value("H") ?? value("k")
            if hour == nil, let twelve = value("I") ?? value("l") {
                hour = twelve % 12 + (value("p") == 1 ? 12 : 0)
            }
            let parts = [year, month, value("d") ?? value("e"), value("j"), hour, value("M"), value("S")].map { $0 ?? 0 }
            return (value("s").map { [$0] } ?? []) + parts
        }
    }

    /// Matches `tokens` against all of `name`, trying the lengths a
    /// variable field may take, longest first.
    static func match(_ tokens: [Token], _ name: [UInt8]) -> Fields? {
        func step(_ token: Int, _ position: Int, _ fields: Fields) -> Fields? {
            guard token < tokens.count else { return position == name.count ? fields : nil }
            switch tokens[token] {
            case .literal(let byte):
                guard position < name.count, name[position] == byte else { return nil }
                return step(token + 1, position + 1, fields)
            case .counter(let width), .camera(let width):
                for (length, value) in numberCandidates(name, at: position, width: width) {
                    var next = fields
                    if case .counter = tokens[token] { next.number = value } else { next.camera = value }
                    if let found = step(token + 1, position + length, next) { return found }
                }
                return nil
            case .time(let field):
                for (length, value) in timeCandidates(field, name, at: position) {
                    var next = fields
                    // A field given twice (%H in %T and %H) must read the same both times.
                    if let earlier = next.values[field], earlier != value { continue }
                    next.values[field] = value
                    if let found = step(token + 1, position + length, next) { return found }
                }
                return nil
            }
        }
        return step(0, 0, Fields())
    }

    /// The digits at `position` that `%Nn` could have written: the number
    /// (from 1) padded with zeros to `width`, never otherwise.
    static func numberCandidates(_ name: [UInt8], at position: Int, width: Int) -> [(length: Int, value: Int)] {
        var end = position
        while end < name.count, isDigit(name[end]) { end += 1 }
        var candidates: [(Int, Int)] = []
        var length = end - position
        while length >= 1 {
            let digits = name[position..<position + length]
            if length <= 18, let value = Int(String(decoding: digits, as: UTF8.self)), value >= 1 {
                let written = String(value)
                if String(repeating: "0", count: max(0, width - written.count)) + written == String(decoding: digits, as: UTF8.self) {
                    candidates.append((length, value))
                }
            }
            length -= 1
        }
        return candidates
    }

    private static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                                 "October", "November", "December"]

    /// What strftime's `field` could have written at `position` (C locale),
    /// each with its value: a number, or a name's index.
    static func timeCandidates(_ field: UInt8, _ name: [UInt8], at position: Int) -> [(length: Int, value: Int)] {
        func digits(_ count: Int, _ range: ClosedRange<Int>) -> [(Int, Int)] {
            guard position + count <= name.count, name[position..<position + count].allSatisfy(isDigit) else { return [] }
            let value = name[position..<position + count].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            return range.contains(value) ? [(count, value)] : []
        }
        // Space-padded (%e, %k, %l): " 5" or "15".
        func padded(_ range: ClosedRange<Int>) -> [(Int, Int)] {
            guard position + 2 <= name.count, isDigit(name[position + 1]) else { return [] }
            let ones = Int(name[position + 1] - UInt8(ascii: "0"))
            let value: Int
            if name[position] == UInt8(ascii: " ") {
                value = ones
            } else if isDigit(name[position]), name[position] != UInt8(ascii: "0") {
                value = Int(name[position] - UInt8(ascii: "0")) * 10 + ones
            } else {
                return []
            }
            guard range.contains(value), (value < 10) == (name[position] == UInt8(ascii: " ")) else { return [] }
            return [(2, value)]
        }
        func names(_ list: [String]) -> [(Int, Int)] {
            for (index, word) in list.enumerated() {
                let bytes = Array(word.utf8)
                if position + bytes.count <= name.count, Array(name[position..<position + bytes.count]) == bytes { return [(bytes.count, index)] }
            }
            return []
        }
        switch Character(Unicode.Scalar(field)) {
        case "Y", "G": return digits(4, 0...9999)
        case "C", "y", "g": return digits(2, 0...99)
        case "m": return digits(2, 1...12)
        case "d": return digits(2, 1...31)
        case "H": return digits(2, 0...23)
        case "I": return digits(2, 1...12)
        case "M": return digits(2, 0...59)
        case "S": return digits(2, 0...60)
        case "j": return digits(3, 1...366)
        case "U", "W": return digits(2, 0...53)
        case "V": return digits(2, 1...53)
        case "u": return digits(1, 1...7)
        case "w": return digits(1, 0...6)
        case "e": return padded(1...31)
        case "k": return padded(0...23)
        case "l": return padded(1...12)
        case "a": return names(weekdays.map { String($0.prefix(3)) })
        case "A": return names(weekdays)
        case "b": return names(months.map { String($0.prefix(3)) })
        case "B": return names(months)
        case "p": return names(["AM", "PM"])
        case "t": return position < name.count && name[position] == 9 ? [(1, 0)] : []
        case "z":
            guard position + 5 <= name.count, name[position] == UInt8(ascii: "+") || name[position] == UInt8(ascii: "-"),
                  name[position + 1..<position + 5].allSatisfy(isDigit) else { return [] }
            return [(5, 0)]
        case "Z":
            // A zone's abbreviation: letters, or a numeric one such as +03.
            var end = position
            while end < name.count, isAlphanumeric(name[end]) || name[end] == UInt8(ascii: "+") || name[end] == UInt8(ascii: "-") { end += 1 }
            return stride(from: end - position, through: 1, by: -1).map { ($0, 0) }
        case "s":
            var end = position
            if end < name.count, name[end] == UInt8(ascii: "-") { end += 1 }
            let first = end
            while end < name.count, isDigit(name[end]) { end += 1 }
            guard end > first else { return [] }
            var candidates: [(Int, Int)] = []
            for stop in stride(from: end, to: first, by: -1) {
                let text = String(decoding: name[position..<stop], as: UTF8.self)
                // As printed: no leading zero.
                if let value = Int(text), String(value) == text { candidates.append((stop - position, value)) }
            }
            return candidates
        default:
            return []
        }
    }

    /// A name without the `-N` (N from 2) that `numbered` puts before the
    /// extension, and N; nil when it has none.
    static func strippingNumberSuffix(_ name: [UInt8], hasFolder: Bool) -> ([UInt8], Int)? {
        var dot = name.lastIndex(of: UInt8(ascii: ".")) ?? name.count
        if dot == 0 && !hasFolder { dot = name.count }
        var start = dot
        while start > 0, isDigit(name[start - 1]) { start -= 1 }
        guard start < dot, start > 0, name[start - 1] == UInt8(ascii: "-"), name[start] != UInt8(ascii: "0"), dot - start <= 18,
              let number = Int(String(decoding: name[start..<dot], as: UTF8.self)), number >= 2 else { return nil }
        return (Array(name[..<(start - 1)] + name[dot...]), number)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
