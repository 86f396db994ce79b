import CapctlCommands
import CaptureKit

/// `PATCH /devices/{id}/controls`' body: control names and the values to
/// set, as `capctl set` takes them (numbers, strings, or true/false for
/// on/off), in the order they are applied.
package struct ControlChanges: Sendable {
    package let assignments: [ControlAssignment]

    /// Reads a request body: at least one control.
    package init(json settings: [String: JSONValue]) throws(ServiceError) {
        guard !settings.isEmpty else {
            throw ServiceError(.badRequest, "give at least one control, such as {\"brightness\": 10}; GET /devices/ID/controls lists a camera's")
        }
        var assignments: [ControlAssignment] = []
        for (name, value) in Self.ordered(settings) {
            let text: String
            switch value {
            case .bool(let on): text = on ? "on" : "off"
            default:
                guard let word = value.word else {
                    throw ServiceError(.badRequest, "\(name) must be a number, a string or true/false, not \(value.kindName)")
                }
                text = word
            }
            assignments.append(ControlAssignment(key: name, value: text))
        }
        self.assignments = assignments
    }

    /// Automatic-mode switches and the feature modes first, then the rest, each by name.
    private static func ordered(_ settings: [String: JSONValue]) -> [(String, JSONValue)] {
        func first(_ name: String) -> Bool {
            let lowered = name.lowercased()
            return lowered.contains("auto") || ["focus", "exposure", "white_balance"].contains(lowered)
        }
        return settings.sorted { left, right in
            first(left.key) != first(right.key) ? first(left.key) : left.key < right.key
        }
    }

}

/// `POST /devices/{id}/torch`'s body: on at a level, off, or only its state
/// (`{}`, and `GET /devices/{id}/torch`).
package enum TorchRequest: Sendable {
    case on(TorchLevel)
    case off
    case status

    /// Reads a request body.
    package init(json settings: [String: JSONValue]) throws(ServiceError) {
        for key in settings.keys.sorted() where key != "on" && key != "level" {
            throw ServiceError(.badRequest, "unknown setting '\(key)'; the torch takes on (true or false) and level (above 0 up to 1.0, or \"max\")")
        }
        var level: TorchLevel?
        if let value = settings["level"] {
            switch value {
            case .integer, .number:
                guard let text = value.word, let number = Double(text), number > 0, number <= 1 else {
                    throw ServiceError(.badRequest, "level \(value.word ?? "") is outside 0.0-1.0; give a fraction of full output above 0 (such as 0.5), or \"max\"; {\"on\": false} turns it off")
                }
                level = .level(number)
            case .string(let text) where text.lowercased() == "max":
                level = .maximumAvailable
            default:
                throw ServiceError(.badRequest, "level must be a number above 0 up to 1.0, or \"max\"")
            }
        }
        switch settings["on"] {
        case .bool(true)?: self = .on(level ?? .maximumAvailable)
        case .bool(false)?:
            guard level == nil else { throw ServiceError(.badRequest, "level applies to turning the torch on; {\"on\": false} turns it off") }
            self = .off
        case nil: self = level.map(TorchRequest.on) ?? .status
        case let other?: throw ServiceError(.badRequest, "on must be true or false, not \(other.kindName)")
        }
    }
}
