import CapctlCommands
import CapctlService
import FoundationEssentials
import Hummingbird

/// The service's routes: small handlers that turn a request into one call on
/// the service (`CaptureServing`) and its answer into a response, as a subcommand turns
/// options into a call on CaptureKit.
enum ServiceRouter {
    static func make(service: any CaptureServing, configuration: ServiceConfiguration, access: AccessControl,
                     accessLog: AccessLog) -> Router<ServiceRequestContext> {
        let router = Router(context: ServiceRequestContext.self)
        let routes = RouteMethods()
        router.add(middleware: AccessLogMiddleware(log: accessLog))
        router.add(middleware: ErrorMiddleware(routes: routes))
        router.add(middleware: RequestGuardMiddleware(configuration: configuration, access: access))
        router.add(middleware: AccessMiddleware(access: access, operations: OpenAPIDocument.operations,
                                                defaultCamera: service.inputDocuments.first { $0.mediaType == "video" }?.id))
        router.add(middleware: ContentTypeMiddleware())

        addPageRoutes(to: router)
        router.get("openapi.json") { _, _ in json(OpenAPIDocument.text) }
        router.get("session") { _, context in
            var session = service.sessionDocument
            // A credential of some cameras sees those cameras' views and viewers only.
            if let cameras = context.access.cameras {
                session.views.removeAll { !cameras.contains($0.camera) }
                session.webrtc.removeAll { !cameras.contains($0.camera) }
            }
            return json(session)
        }
        router.get("devices") { _, _ in json(["devices": service.inputDocuments]) }
        addRecordingRoutes(to: router, service: service)
        addPhotoRoutes(to: router, service: service)
        addDeviceRoutes(to: router, service: service)
        addFileRoutes(to: router, service: service)
        addEventRoutes(to: router, service: service)
        addLiveViewRoutes(to: router, service: service)
        addWHEPRoutes(to: router, service: service)
        addAccessRoutes(to: router, service: service, access: access)
        addMetricsRoutes(to: router, service: service, access: access, accessLog: accessLog)
        routes.learn(router)
        return router
    }

    /// A JSON response of a document.
    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        json(JSONBody(value), status: status)
    }

    static func json(_ body: JSONBody, status: HTTPResponse.Status = .ok) -> Response {
        json(body.text, status: status)
    }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }

    /// A request's body as a JSON object (an empty body is an empty object).
    static func object(_ request: Request, context: ServiceRequestContext) async throws -> [String: JSONValue] {
        let buffer = try await request.body.collect(upTo: context.maxUploadSize)
        guard buffer.readableBytes > 0 else { return [:] }
        do {
            return try JSONDecoder().decode([String: JSONValue].self, from: Data(buffer.readableBytesView))
        } catch {
            throw ServiceError.http(.badRequest, "the body is not a JSON object; send settings such as {\"file\": \"clip.mp4\"}")
        }
    }

    /// A path parameter the route guarantees.
    static func parameter(_ name: String, _ context: ServiceRequestContext) throws -> String {
        guard let value = context.parameters.get(name) else { throw ServiceError.http(.badRequest, "no \(name) in the path") }
        return value
    }
}
