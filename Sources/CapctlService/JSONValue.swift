import CapctlCommands
/// Any JSON value, as a request body holds it (FoundationEssentials has no JSONSerialization).
package enum JSONValue: Decodable, Sendable, Equatable {
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
    case null

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The value as a command-line word: strings as they are, numbers in
    /// decimal; nil for what has no such form (arrays, objects, null, booleans).
    var word: String? {
        switch self {
        case .string(let text): return text
        case .integer(let value): return String(value)
        case .number(let value):
            guard value.isFinite else { return nil }
            return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        default: return nil
        }
    }

    /// What kind of value it is, for messages.
    var kindName: String {
        switch self {
        case .bool: return "true or false"
        case .integer, .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        case .null: return "null"
        }
    }
}
