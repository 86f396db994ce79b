import CapctlCommands
import CapctlService
import Hummingbird

extension ServiceRouter {
    /// `GET /access`: what the request's credential may do; `POST /view-links`: a link to
    /// one camera's live view that expires.
    static func addAccessRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing, access: AccessControl) {
        router.get("access") { _, context in
            let grant = context.access
            let allowed = OpenAPIDocument.operations.filter {
                grant.role.allows($0.role) && ($0.cameras != .every || grant.coversEveryCamera) && (!grant.isViewLink || $0.acceptsViewLink)
            }
            return json(AccessDocument(name: grant.name, role: grant.role.rawValue, cameras: grant.cameras?.sorted(),
                                       expires: grant.expires.map(EventTime.time(ofUnixSeconds:)), allows: allowed.map(\.operationID)))
        }
        router.post("view-links") { request, context in
            let body = try await object(request, context: context)
            let (camera, seconds) = try viewLinkRequest(body, service: service)
            try context.requireCamera(camera, service: service)
            let link = access.makeLink(camera: camera, seconds: seconds)
            let query = "camera=\(camera)&link=\(link.text)"
            return json(ViewLinkDocument(camera: camera, link: link.text, expires: EventTime.time(ofUnixSeconds: link.expires),
                                         stream: "/stream.mjpg?\(query)", snapshot: "/snapshot.jpg?\(query)", page: "/?link=\(link.text)"),
                        status: .created)
        }
    }

    /// `{"camera", "seconds"}`, checked: a camera of the service (default the first) and 1 s to 31 days (default an hour).
    private static func viewLinkRequest(_ body: [String: JSONValue], service: any CaptureServing) throws -> (String, Int) {
        for key in body.keys.sorted() where !["camera", "seconds"].contains(key) {
            throw ServiceError.http(.badRequest, "unknown setting '\(key)'; a view link takes camera and seconds")
        }
        let cameras = service.inputDocuments.filter { $0.mediaType == "video" }.map(\.id)
        var camera = cameras.first
        if let value = body["camera"] {
            guard case .string(let id) = value else {
                throw ServiceError.http(.badRequest, "camera must be a device id GET /devices lists, such as \"0\"")
            }
            camera = id
        }
        guard let camera, cameras.contains(camera) else {
            throw ServiceError.http(.notFound, "the service has no camera \(camera ?? ""); GET /devices lists them (mediaType video)")
        }
        var seconds = 3600
        if let value = body["seconds"] {
            guard case .integer(let number) = value, (1...Int64(ViewLink.longest)).contains(number) else {
                throw ServiceError.http(.badRequest, "seconds must be a whole number from 1 to \(ViewLink.longest) (31 days)")
            }
            seconds = Int(number)
        }
        return (camera, seconds)
    }
}

/// `GET /access`'s answer: never a secret.
struct AccessDocument: Encodable {
    var name: String
    var role: String
    var cameras: [String]?
    var expires: String?
    var allows: [String]
}

/// `POST /view-links`' answer.
struct ViewLinkDocument: Encodable {
    var camera: String
    var link: String
    var expires: String
    var stream: String
    var snapshot: String
    var page: String
}

extension ServiceRequestContext {
    /// Refuses (403, counted) a camera named in a request's body that the request's credential does not cover;
    /// nil is the first camera.
    func requireCamera(_ id: String?, service: any CaptureServing) throws {
        guard let camera = id ?? service.inputDocuments.first(where: { $0.mediaType == "video" })?.id else { return }
        guard access.covers(camera: camera) else {
            let refusal = access.refusal(camera: camera)
            accessControl?.count(refusal)
            throw ServiceError.http(.forbidden, refusal.message)
        }
    }
}
