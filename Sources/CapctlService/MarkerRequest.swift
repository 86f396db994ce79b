/// `POST /recordings/{id}/markers`' body: `{"title": "door opened"}`.
package struct MarkerRequest: Sendable {
    /// The chapter's title.
    package let title: String

    /// Reads a request body.
    package init(json body: [String: JSONValue]) throws(ServiceError) {
        guard case .string(let title)? = body["title"], body.count == 1 else {
            throw ServiceError(.badRequest, "a marker takes one setting, title, a string such as {\"title\": \"door opened\"}")
        }
        self.title = title
    }
}
