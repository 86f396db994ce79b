import CapctlCommands
/// Metrics written in Prometheus's text exposition format, version 0.0.4
/// (what `GET /metrics` answers): families of samples, each family once
/// with its `# HELP` and `# TYPE` lines, in the order they were first given.
///
///     var metrics = PrometheusExposition()
///     metrics.add("capctl_input_frames_captured_total", .counter, help: "Frames captured.",
///                 labels: [("input", "0")], value: 1200)
///     metrics.text   // # HELP …\n# TYPE … counter\ncapctl_input_frames_captured_total{input="0"} 1200\n
package struct PrometheusExposition: Sendable {
    /// What a family's samples are (the 0.0.4 types capctl uses).
    package enum Kind: String, Sendable {
        /// Only grows while the process runs (its name ends in `_total`).
        case counter
        /// Goes up and down.
        case gauge
    }

    /// The response's content type.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private struct Family {
        var name: String
        var kind: Kind
        var help: String
        /// Each sample's label text (`{a="1",b="2"}` or empty) and value, in order.
        var samples: [(labels: String, value: String)] = []
        var seen: Set<String> = []
    }

    private var families: [Family] = []
    private var familyIndex: [String: Int] = [:]

    package init() {}

    /// Whether no sample has been added.
    package var isEmpty: Bool { families.isEmpty }

    /// The names of the families, in order.
    package var familyNames: [String] { families.map(\.name) }

    /// Adds one sample of family `name`. The first sample of a family sets its
    /// kind and help; a sample of a family that has the same labels as one
    /// before it is left out (a series has one value). Names follow
    /// Prometheus's rules (`[a-zA-Z_:][a-zA-Z0-9_:]*`, labels without ':' and
    /// not starting with `__`): a name that does not is a programming error.
    package mutating func add(_ name: String, _ kind: Kind, help: String, labels: [(String, String)] = [], value: Double) {
        add(name, kind, help: help, labels: labels, text: Self.format(value))
    }

    package mutating func add(_ name: String, _ kind: Kind, help: String, labels: [(String, String)] = [], value: Int) {
        add(name, kind, help: help, labels: labels, text: String(value))
    }

    package mutating func add(_ name: String, _ kind: Kind, help: String, labels: [(String, String)] = [], value: Int64) {
        add(name, kind, help: help, labels: labels, text: String(value))
    }

    private mutating func add(_ name: String, _ kind: Kind, help: String, labels: [(String, String)], text: String) {
        precondition(Self.isMetricName(name), "'\(name)' is not a Prometheus metric name")
        precondition(kind != .counter || name.hasSuffix("_total"), "counter '\(name)' does not end in _total")
        let index: Int
        if let known = familyIndex[name] {
            index = known
            precondition(families[index].kind == kind, "'\(name)' added as a \(kind.rawValue), first as a \(families[index].kind.rawValue)")
        } else {
            index = families.count
            familyIndex[name] = index
            families.append(Family(name: name, kind: kind, help: help))
        }
        var labelText = ""
        if !labels.isEmpty {
            labelText = "{" + labels.map { name, value in
                precondition(Self.isLabelName(name), "'\(name)' is not a Prometheus label name")
                return name + "=\"" + Self.escapeLabelValue(value) + "\""
            }.joined(separator: ",") + "}"
        }
        guard families[index].seen.insert(labelText).inserted else { return }
        families[index].samples.append((labelText, text))
    }

    /// The exposition: every family's HELP, TYPE and samples, one line each, ending in a newline.
    package var text: String {
        var text = ""
        for family in families {
            text += "# HELP \(family.name) \(Self.escapeHelp(family.help))\n"
            text += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for sample in family.samples {
                text += family.name + sample.labels + " " + sample.value + "\n"
            }
        }
        return text
    }

    // MARK: The format's rules

    /// A label value with backslash, double quote and line feed escaped.
    package static func escapeLabelValue(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") }) else {
            return value
        }
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// HELP text with backslash and line feed escaped (a quote stays as it is there).
    package static func escapeHelp(_ help: String) -> String {
        var escaped = ""
        for scalar in help.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// A value as Go's ParseFloat reads it: `NaN`, `+Inf`, `-Inf`; a whole
    /// number below 2^53 without a fraction or exponent; otherwise the
    /// shortest text that reads back as the same Double.
    package static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return "\(value)"
    }

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { isNameByte($0) || $0 == UInt8(ascii: ":") }
    }

    static func isLabelName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first), !name.hasPrefix("__") else { return false }
        return name.utf8.allSatisfy(isNameByte)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }
}
