import CapctlCommands

/// What an operation of the API needs: the role, and which cameras it touches.
/// The table of every operation is generated from the OpenAPI document's
/// `x-capctl-role` and `x-capctl-cameras` (scripts/openapi), so that the
/// document and the checks cannot say different things.
package struct OperationAccess: Sendable, Equatable {
    /// Which cameras an operation touches, and where the request names them.
    package enum Cameras: Sendable, Equatable {
        /// None in particular (the page, the session, the device list).
        case none
        /// Every camera: a recording takes them all, and the files, events and metrics are all of theirs.
        case every
        /// The camera of a path parameter (`/devices/{id}/…`).
        case path(String)
        /// The camera of a query parameter, the first camera when it is left out (`/stream.mjpg?camera=`).
        case query(String)
        /// The camera of a key of the JSON body, the first camera when it is left out; the handler checks it.
        case body(String)

        /// The query parameter that names the camera, if the query does.
        package var queryParameter: String? {
            if case .query(let name) = self { return name }
            return nil
        }

        /// `none`, `every`, `path:NAME`, `query:NAME` or `body:NAME`, as the document writes it.
        package init?(_ text: String) {
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            switch (parts.first, parts.count) {
            case ("none", 1): self = .none
            case ("every", 1): self = .every
            case ("path", 2): self = .path(parts[1])
            case ("query", 2): self = .query(parts[1])
            case ("body", 2): self = .body(parts[1])
            default: return nil
            }
        }
    }

    package let operationID: String
    package let method: String
    /// The document's path template, such as `/devices/{id}/controls`.
    package let path: String
    package let role: AccessRole
    package let cameras: Cameras
    /// Whether a view link may stand for a credential here (the live views of its camera).
    package let acceptsViewLink: Bool
    /// Whether it is served without a credential (the page, which asks for one).
    package let isPublic: Bool
    /// Whether the template's last parameter takes the rest of the path, slashes and all (`/files/{name}`: `/files/a/b.mp4`).
    package let lastParameterTakesRest: Bool
    /// The template's segments, split once: each request is matched against every operation.
    private let segments: [Segment]

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    package init(operationID: String, method: String, path: String, role: AccessRole, cameras: Cameras,
                 acceptsViewLink: Bool, isPublic: Bool, lastParameterTakesRest: Bool = false) {
        self.operationID = operationID
        self.method = method
        self.path = path
        self.role = role
        self.cameras = cameras
        self.acceptsViewLink = acceptsViewLink
        self.isPublic = isPublic
        self.lastParameterTakesRest = lastParameterTakesRest
        segments = path.split(separator: "/").map { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
    }

    /// The values of the path template's parameters in `path`, or nil when it does not match.
    package func match(_ requestPath: Substring) -> [String: Substring]? {
        match(requestPath, parts: requestPath.split(separator: "/"))
    }

    fileprivate func match(_ requestPath: Substring, parts: [Substring]) -> [String: Substring]? {
        guard segments.count == parts.count || (lastParameterTakesRest && parts.count > segments.count) else { return nil }
        var values: [String: Substring] = [:]
        for (index, segment) in segments.enumerated() {
            let part = parts[index]
            switch segment {
            case .literal(let text):
                guard part == text else { return nil }
            case .parameter(let name):
                let isLast = index == segments.count - 1
                values[name] = isLast && lastParameterTakesRest ? requestPath[part.startIndex..<parts[parts.count - 1].endIndex] : part
            }
        }
        return values
    }
}

extension Array where Element == OperationAccess {
    /// The operation a request is for, with its path parameters; nil when the API has none
    /// (the router then answers 404 or 405). HEAD is GET's where the document has no HEAD.
    package func operation(method: String, path: Substring) -> (OperationAccess, [String: Substring])? {
        let parts = path.split(separator: "/")
        for operation in self where operation.method == method {
            if let values = operation.match(path, parts: parts) { return (operation, values) }
        }
        if method == "HEAD" { return operation(method: "GET", path: path) }
        return nil
    }
}
