import Hummingbird
import Synchronization

/// The methods each of the router's paths takes, so that a request with
/// another method on a path the service has is answered 405 with `Allow`
/// (RFC 9110), not 404 as if the path did not exist. Filled once the routes
/// are added; the error middleware, added before them, reads it.
final class RouteMethods: Sendable {
    private let routes = Mutex<[(pattern: [RouterPath.Element], method: String)]>([])

    /// Takes the router's routes, once they are all added.
    func learn(_ router: Router<ServiceRequestContext>) {
        let found = router.routes.map { ($0.path.components, $0.method.rawValue) }
        routes.withLock { $0 = found }
    }

    /// The methods `path` is taken with, in alphabetical order (empty: no such path).
    func methods(for path: String) -> [String] {
        let parts = path.split(separator: "/")
        let methods = routes.withLock { routes in routes.filter { Self.matches($0.pattern, parts) }.map(\.method) }
        return Set(methods).sorted()
    }

    private static func matches(_ pattern: [RouterPath.Element], _ parts: [Substring]) -> Bool {
        for (index, element) in pattern.enumerated() {
            if element == .recursiveWildcard { return parts.count > index }
            guard index < parts.count, element ~= parts[index] else { return false }
        }
        return pattern.count == parts.count
    }
}
