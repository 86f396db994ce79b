import CapctlCommands
/// Why the service refused a request: its kind (the HTTP layer's status) and
/// one line saying what was wrong and what to do instead.
package struct ServiceError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable {
        /// The request cannot work as given (400).
        case badRequest
        /// No such recording, device or file (404).
        case notFound
        /// The request conflicts with the state: a file that exists, a recording that has ended (409).
        case conflict
        /// Too many recordings at once (429).
        case tooMany
        /// A device or stream cannot be had now (503).
        case unavailable
        /// The request was valid, but carrying it out failed (500).
        case failed
    }

    package let kind: Kind
    package let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}

/// A response body: one JSON document, keys sorted.
package struct JSONBody: Sendable {
    package let text: String

    package init<T: Encodable>(_ value: T) {
        // The service's documents are plain values: encoding them cannot fail.
        text = (try? JSONOutput.line(value)) ?? "{}"
    }

    /// `{"error": message}`, as every refusal answers.
    package init(error message: String) {
        self.init(["error": message])
    }
}
