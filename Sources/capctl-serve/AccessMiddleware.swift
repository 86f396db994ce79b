import CapctlService
import Hummingbird

/// Who a request is, and whether it may do what it asks, before any handler runs:
/// - the operation (from the OpenAPI document's table) names the role it needs and the cameras it touches;
/// - the request carries a credential (`Authorization: Bearer`, or for a GET, `access_token`
///   in the query, as a browser's EventSource cannot send headers), or on a live view of one
///   camera a view link (`link` in the query); the page of `GET /` needs neither;
/// - the credential's role allows the operation, and its cameras cover the camera the
///   path or query names (a body's camera is checked by its handler, through `context.access`).
/// Refusals are 401 (who it is is unknown) or 403 (it may not), counted by reason.
struct AccessMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let access: AccessControl
    let operations: [OperationAccess]
    /// The device id of the first camera: the camera of a query or body that names none.
    let defaultCamera: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let found = operations.operation(method: request.method.rawValue, path: Substring(request.uri.path))
        // A request for no operation of the document (a path or method the service does not have) needs admin,
        // so that a route the document left out cannot be open; the router then answers 404 or 405.
        let (operation, parameters) = found ?? (Self.undocumented(request), [:])
        // A parameter the checks read, given twice, could be read one way here and another by the handler.
        for name in ["link", "access_token"] + (operation.cameras.queryParameter.map { [$0] } ?? []) {
            if request.uri.queryParameters.getAll(name).count > 1 {
                throw ServiceError.http(.badRequest, "\(name) is given more than once; give it once")
            }
        }
        var context = context
        context.access = try grant(request, operation)
        context.accessControl = access
        try checkCameras(operation, parameters, request, context.access)
        return try await next(request, context)
    }

    /// What a request for no operation of the document needs: admin, on every camera.
    static func undocumented(_ request: Request) -> OperationAccess {
        OperationAccess(operationID: "undocumented", method: request.method.rawValue, path: request.uri.path, role: .admin, cameras: .every,
                        acceptsViewLink: false, isPublic: false)
    }

    private func grant(_ request: Request, _ operation: OperationAccess) throws -> AccessGrant {
        guard access.requiresCredentials else { return .anyone }
        // The page is the same for everyone: a link or secret it carries is checked by the requests
        // it makes, so that an expired link still gets the page, which says so.
        if operation.isPublic { return AccessGrant(name: "anyone", role: .view, cameras: []) }
        let link = request.uri.queryParameters["link"]
        let secret = Self.secret(request)
        let result: Result<AccessGrant, AccessRefusal>
        if let secret {
            result = access.grant(secret: secret)
        } else if let link, operation.acceptsViewLink {
            result = access.grant(link: link)
        } else {
            let what = operation.acceptsViewLink ? "a credential or a view link (?link=)" : "a credential"
            result = .failure(AccessRefusal(.missing, "this service needs \(what): send 'Authorization: Bearer SECRET'"))
        }
        switch result {
        case .success(let grant):
            guard grant.role.allows(operation.role) else {
                throw refuse(AccessRefusal(.role, "credential '\(grant.name)' has role \(grant.role.rawValue); \(operation.method) \(operation.path) needs \(operation.role.rawValue)"))
            }
            return grant
        case .failure(let refusal):
            throw refuse(refusal)
        }
    }

    private func checkCameras(_ operation: OperationAccess, _ parameters: [String: Substring], _ request: Request, _ grant: AccessGrant) throws {
        switch operation.cameras {
        case .none, .body:
            return
        case .every:
            guard grant.coversEveryCamera else {
                throw refuse(AccessRefusal(.camera, "\(operation.method) \(operation.path) touches every camera; credential '\(grant.name)' covers \(AccessGrant.list(grant.cameras)) only"))
            }
        case .path(let name):
            guard let id = parameters[name].map(String.init) else { return }
            let camera = (try? PercentDecoding.decode(Substring(id))) ?? id
            if !grant.covers(camera: camera) { throw refuse(refusal(grant, camera: camera)) }
        case .query(let name):
            guard let camera = request.uri.queryParameters[Substring(name)].map(String.init) ?? defaultCamera else { return }
            if !grant.covers(camera: camera) { throw refuse(refusal(grant, camera: camera)) }
        }
    }

    /// A credential that does not cover a camera may not (403); a view link of another camera is no link for this one (401).
    private func refusal(_ grant: AccessGrant, camera: String) -> AccessRefusal {
        guard grant.isViewLink else { return grant.refusal(camera: camera) }
        return AccessRefusal(.badLink, "the view link is for camera \(grant.cameras?.sorted().joined() ?? ""), not camera \(camera)")
    }

    private func refuse(_ refusal: AccessRefusal) -> ServiceHTTPError {
        access.count(refusal)
        guard refusal.reason.isUnauthenticated else { return ServiceError.http(.forbidden, refusal.message) }
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Bearer realm=\"capctl\""
        return ServiceError.http(.unauthorized, refusal.message, headers: headers)
    }

    /// The secret a request presents: its Bearer credential, or for a GET or HEAD, `access_token` in its query.
    static func secret(_ request: Request) -> Substring? {
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "bearer" ? parts[1] : Substring("")
        }
        if request.method == .get || request.method == .head {
            return request.uri.queryParameters["access_token"]
        }
        return nil
    }
}
