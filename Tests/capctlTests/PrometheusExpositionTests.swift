import CapctlCommands
import CapctlService
import Foundation
import Testing

/// `PrometheusExposition`, the text `GET /metrics` answers: escaping, each
/// family's HELP and TYPE once, numbers as Prometheus reads them. Each text is
/// read back with `PrometheusText`, a reader of the format written from its
/// specification, not from the writer.
@Suite struct PrometheusExpositionTests {
    @Test func labelValuesAreEscapedAndReadBackAsGiven() throws {
        let tricky = #"C:\cams\"front"\#nsecond line"#
        var metrics = PrometheusExposition()
        metrics.add("capctl_test_total", .counter, help: "A test.", labels: [("name", tricky), ("plain", "Test pattern")], value: 1)
        let text = metrics.text
        #expect(text.contains(#"name="C:\\cams\\\"front\"\nsecond line""#), "\(text)")
        #expect(!text.contains("\nsecond line"), "a raw line feed in a label value ends the line")
        let parsed = try PrometheusText(text)
        #expect(parsed.samples.count == 1)
        #expect(parsed.samples.first?.labels == ["name": tricky, "plain": "Test pattern"])
        #expect(PrometheusExposition.escapeLabelValue("no escapes: ü é") == "no escapes: ü é")
    }

    @Test func helpEscapesBackslashAndLineFeedButNotQuotes() throws {
        var metrics = PrometheusExposition()
        metrics.add("capctl_help", .gauge, help: "Bytes in \"--dir\"\\n\nsecond", value: 1)
        let help = try #require(metrics.text.split(separator: "\n").first)
        #expect(help == #"# HELP capctl_help Bytes in "--dir"\\n\nsecond"#)
        #expect(try PrometheusText(metrics.text).help["capctl_help"] == "Bytes in \"--dir\"\\n\nsecond")
    }

    @Test func eachFamilyHasItsHelpAndTypeOnceWithItsSamplesTogether() throws {
        var metrics = PrometheusExposition()
        // Samples of two families given interleaved, as a loop over recordings gives them.
        for id in ["rec-1", "rec-2"] {
            metrics.add("capctl_recording_frames_total", .counter, help: "Frames.", labels: [("recording", id)], value: 10)
            metrics.add("capctl_recording_duration_seconds", .gauge, help: "Seconds.", labels: [("recording", id)], value: 0.5)
        }
        // The same series again: the first value stays.
        metrics.add("capctl_recording_frames_total", .counter, help: "Other help.", labels: [("recording", "rec-1")], value: 99)
        let text = metrics.text
        #expect(text == """
        # HELP capctl_recording_frames_total Frames.
        # TYPE capctl_recording_frames_total counter
        capctl_recording_frames_total{recording="rec-1"} 10
        capctl_recording_frames_total{recording="rec-2"} 10
        # HELP capctl_recording_duration_seconds Seconds.
        # TYPE capctl_recording_duration_seconds gauge
        capctl_recording_duration_seconds{recording="rec-1"} 0.5
        capctl_recording_duration_seconds{recording="rec-2"} 0.5

        """)
        let parsed = try PrometheusText(text)
        #expect(parsed.type == ["capctl_recording_frames_total": "counter", "capctl_recording_duration_seconds": "gauge"])
        #expect(metrics.familyNames == ["capctl_recording_frames_total", "capctl_recording_duration_seconds"])
        #expect(PrometheusExposition().text.isEmpty)
    }

    @Test func numbersAreWrittenAsPrometheusReadsThem() throws {
        #expect(PrometheusExposition.format(.nan) == "NaN")
        #expect(PrometheusExposition.format(.infinity) == "+Inf")
        #expect(PrometheusExposition.format(-.infinity) == "-Inf")
        #expect(PrometheusExposition.format(0) == "0")
        #expect(PrometheusExposition.format(-0.0) == "0")
        #expect(PrometheusExposition.format(42) == "42")
        #expect(PrometheusExposition.format(1e15) == "1000000000000000")
        #expect(PrometheusExposition.format(0.25) == "0.25")
        #expect(PrometheusExposition.format(-1.5) == "-1.5")
        #expect(PrometheusExposition.format(1795667714.96) == "1795667714.96")
        // Beyond 2^53 a Double is not an exact integer: its shortest exact text, which Go reads back.
        #expect(Double(PrometheusExposition.format(1e20)) == 1e20)
        #expect(Double(PrometheusExposition.format(1.234e-7)) == 1.234e-7)

        var metrics = PrometheusExposition()
        metrics.add("capctl_bytes_total", .counter, help: "Bytes.", labels: [("kind", "int64")], value: Int64.max)
        metrics.add("capctl_bytes_total", .counter, help: "Bytes.", labels: [("kind", "int")], value: 12_345_678_901_234)
        metrics.add("capctl_ratio", .gauge, help: "A ratio.", labels: [("kind", "nan")], value: Double.nan)
        metrics.add("capctl_ratio", .gauge, help: "A ratio.", labels: [("kind", "inf")], value: Double.infinity)
        let text = metrics.text
        // Integer counters stay exact: no exponent, no fraction.
        #expect(text.contains(#"capctl_bytes_total{kind="int64"} 9223372036854775807"#))
        #expect(text.contains(#"capctl_bytes_total{kind="int"} 12345678901234"#))
        #expect(text.contains(#"capctl_ratio{kind="nan"} NaN"#))
        #expect(text.contains(#"capctl_ratio{kind="inf"} +Inf"#))
        let parsed = try PrometheusText(text)
        #expect(parsed.value("capctl_ratio", ["kind": "inf"]) == .infinity)
        #expect(parsed.value("capctl_ratio", ["kind": "nan"])?.isNaN == true)
    }

    /// The reader the service tests check `/metrics` with refuses what Prometheus would.
    @Test func theReaderRefusesWhatTheFormatForbids() {
        let valid = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 1\n"
        #expect((try? PrometheusText(valid))?.value("a_total", ["x": "1"]) == 1)
        for text in [
            "a_total 1\n",                                                                   // no TYPE
            "# TYPE a counter\na 1\n",                                                      // a counter without _total
            "# TYPE a_total counter\n# TYPE a_total counter\na_total 1\n",                  // TYPE twice
            "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n",                              // a family split
            "# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n",                                // a series twice
            "# TYPE a gauge\na{x=\"\\t\"} 1\n",                                            // an unknown escape
            "# TYPE a gauge\na{x=\"1\"} 1e\n",                                               // not a number
            "# TYPE a gauge\na{x=\"1} 1\n",                                                   // an unterminated value
            "# TYPE a gauge\na 1",                                                           // no final line feed
        ] {
            #expect(throws: PrometheusText.Failure.self, "\(text)") { try PrometheusText(text) }
        }
    }

    @Test func aSampleWithoutLabelsHasNoBraces() {
        var metrics = PrometheusExposition()
        metrics.add("capctl_uptime_seconds", .gauge, help: "Seconds.", value: 3.5)
        #expect(metrics.text.hasSuffix("\ncapctl_uptime_seconds 3.5\n"))
        #expect(PrometheusExposition.contentType == "text/plain; version=0.0.4; charset=utf-8")
    }
}

/// A reader of Prometheus's text format 0.0.4, strict where the format is:
/// every sample belongs to a family whose TYPE came before it (untyped
/// samples are refused here: capctl types all of its own), a family's HELP
/// and TYPE come at most once, its samples are one group, a series appears
/// once, counters end in `_total`, values are numbers Go's ParseFloat reads.
struct PrometheusText {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Failure: Error, CustomStringConvertible {
        let line: Int
        let message: String
        var description: String { "line \(line): \(message)" }
    }

    private(set) var samples: [Sample] = []
    private(set) var type: [String: String] = [:]
    private(set) var help: [String: String] = [:]

    init(_ text: String) throws {
        guard text.isEmpty || text.hasSuffix("\n") else { throw Failure(line: 0, message: "the text does not end in a line feed") }
        var finished = Set<String>()
        var current: String?
        var series = Set<String>()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated().map({ ($0 + 1, String($1)) }) {
            func fail(_ message: String) -> Failure { Failure(line: number, message: "\(message): \(line)") }
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                let rest = line.dropFirst(7)
                let name = String(rest.prefix { $0 != " " })
                let value = String(rest.dropFirst(name.count + 1))
                guard Self.isName(name, colon: true) else { throw fail("not a metric name") }
                if finished.contains(name) || (current != name && samples.contains { $0.name == name }) {
                    throw fail("\(name) comes again after its samples")
                }
                if line.hasPrefix("# HELP ") {
                    guard help[name] == nil else { throw fail("a second HELP") }
                    help[name] = try Self.unescapeHelp(value, fail)
                } else {
                    guard type[name] == nil else { throw fail("a second TYPE") }
                    guard ["counter", "gauge", "histogram", "summary", "untyped"].contains(value) else { throw fail("an unknown type") }
                    guard samples.last?.name != name else { throw fail("TYPE after the family's samples") }
                    type[name] = value
                }
                if let current, current != name { finished.insert(current) }
                current = name
                continue
            }
            if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) { continue }
            var rest = Substring(line)
            let name = String(rest.prefix { $0 != "{" && $0 != " " })
            rest = rest.dropFirst(name.count)
            guard Self.isName(name, colon: true) else { throw fail("not a metric name") }
            guard let kind = type[name] else { throw fail("a sample of \(name), which has no TYPE before it") }
            guard !finished.contains(name), current == name else { throw fail("a sample of \(name) apart from its family's group") }
            if kind == "counter" && !name.hasSuffix("_total") { throw fail("the counter \(name) does not end in _total") }
            var labels: [String: String] = [:]
            if rest.hasPrefix("{") {
                rest = rest.dropFirst()
                while !rest.hasPrefix("}") {
                    let label = String(rest.prefix { $0 != "=" })
                    guard Self.isName(label, colon: false), labels[label] == nil else { throw fail("a bad or repeated label name '\(label)'") }
                    rest = rest.dropFirst(label.count)
                    guard rest.hasPrefix("=\"") else { throw fail("no quoted value for \(label)") }
                    rest = rest.dropFirst(2)
                    var value = ""
                    while true {
                        guard let character = rest.first else { throw fail("an unterminated label value") }
                        rest = rest.dropFirst()
                        if character == "\"" { break }
                        if character == "\\" {
                            guard let escaped = rest.first else { throw fail("a backslash at the end") }
                            rest = rest.dropFirst()
                            switch escaped {
                            case "\\": value.append("\\")
                            case "\"": value.append("\"")
                            case "n": value.append("\n")
                            default: throw fail("an unknown escape \\\(escaped)")
                            }
                        } else {
                            value.append(character)
                        }
                    }
                    labels[label] = value
                    if rest.hasPrefix(",") { rest = rest.dropFirst() } else if !rest.hasPrefix("}") { throw fail("no ',' or '}' after a label") }
                }
                rest = rest.dropFirst()
            }
            guard rest.hasPrefix(" ") else { throw fail("no space before the value") }
            let fields = rest.split(separator: " ")
            guard (1...2).contains(fields.count), let value = Self.number(String(fields[0])) else { throw fail("not a value") }
            let key = name + labels.sorted { $0.key < $1.key }.map { "\u{1}\($0.key)=\($0.value)" }.joined()
            guard series.insert(key).inserted else { throw fail("the same series twice") }
            samples.append(Sample(name: name, labels: labels, value: value))
        }
    }

    /// The samples of `name` whose labels include `labels`.
    func samples(_ name: String, _ labels: [String: String] = [:]) -> [Sample] {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    /// The value of the one sample of `name` whose labels include `labels`; nil when none or several.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let found = samples(name, labels)
        return found.count == 1 ? found[0].value : nil
    }

    /// A value as Go's strconv.ParseFloat reads the ones Prometheus writes.
    private static func number(_ text: String) -> Double? {
        switch text {
        case "NaN": return .nan
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        default:
            guard text.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }) else { return nil }
            return Double(text)
        }
    }

    private static func unescapeHelp(_ text: String, _ fail: (String) -> Failure) throws -> String {
        var result = ""
        var escaping = false
        for character in text {
            if escaping {
                switch character {
                case "\\": result.append("\\")
                case "n": result.append("\n")
                default: throw fail("an unknown escape in HELP")
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    private static func isName(_ name: String, colon: Bool) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || (colon && $0 == ":")) }
    }
}
