import CapctlCommands
import CapctlService
import Hummingbird

extension ServiceRouter {
    /// `POST /photos`: photos from a running camera, answered as the image
    /// itself, or listed once written into the folder (201).
    static func addPhotoRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing) {
        router.post("photos") { request, context in
            let photos = try PhotoRequest(json: try await object(request, context: context))
            try context.requireCamera(photos.camera, service: service)
            // Waits for the camera's frames without holding a thread.
            switch try await service.takePhotos(photos) {
            case .files(let body):
                return json(body, status: .created)
            case .image(let bytes, let contentType, let fields):
                var headers: HTTPFields = [.contentType: contentType, .contentLength: String(bytes.count), .cacheControl: "no-store"]
                for field in fields {
                    if let name = HTTPFields.Element.Name(field.name) { headers[name] = field.value }
                }
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            }
        }
    }
}
