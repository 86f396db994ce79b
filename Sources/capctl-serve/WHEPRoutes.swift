import CapctlCommands
import CapctlService
import Hummingbird
import NIOCore

extension ServiceRouter {
    /// WHEP (WebRTC-HTTP Egress Protocol): `POST /devices/{id}/whep` with an
    /// SDP offer answers 201 with the SDP answer and the viewer's resource in
    /// Location; `DELETE /whep/{viewer}` ends it. Candidates go whole in the
    /// offer and answer: PATCH (trickle ICE) answers 405, as WHEP lets a
    /// server without trickle do.
    static func addWHEPRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing) {
        router.post("devices/:id/whep") { request, context in
            let id = try parameter("id", context)
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            let offer = String(buffer: body)
            guard !offer.isEmpty else { throw ServiceError.http(.badRequest, "the body must be an SDP offer (Content-Type: application/sdp)") }
            let audio = request.uri.queryParameters.get("audio")
            // Negotiation waits for webrtcbin and ICE gathering: off the event loop.
            let answer = try await offload { try service.startWebRTCView(camera: id, audio: audio, offer: offer) }
            let headers: HTTPFields = [
                .contentType: "application/sdp", .location: "/whep/\(answer.id)", .cacheControl: "no-store",
            ]
            return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.sdp)))
        }
        router.delete("whep/:viewer") { _, context in
            let viewer = try parameter("viewer", context)
            // Only a credential (or link) of the viewer's camera may end it: viewers' ids are listed in GET /session.
            if let camera = service.sessionDocument.webrtc.first(where: { $0.id == viewer })?.camera {
                try context.requireCamera(camera, service: service)
            }
            try await offload { try service.endWebRTCView(viewer) }
            return Response(status: .ok)
        }
    }
}
