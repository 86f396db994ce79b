import CapctlCommands
import CapctlService
import Dispatch
import Hummingbird

extension ServiceRouter {
    /// `/recordings`: start one, list them, one's progress, and its requests.
    static func addRecordingRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing) {
        router.post("recordings") { request, context in
            let body = try await object(request, context: context)
            // Checking the settings may ask libavcodec for an encoder's presets: off the event loop too.
            let created = try await offload { try service.startRecording(try StartRecordingRequest(json: body)) }
            var response = json(created, status: .created)
            response.headers[.location] = "/recordings/\(created.id)"
            return response
        }
        router.get("recordings") { _, _ in json(service.recordingList()) }
        router.get("recordings/:id") { _, context in
            json(try service.recordingStatus(try parameter("id", context)))
        }
        router.post("recordings/:id/markers") { request, context in
            let id = try parameter("id", context)
            let marker = try MarkerRequest(json: try await object(request, context: context))
            return json(try service.addMarker(marker, recording: id), status: .created)
        }
        for action in [CaptureService.RecordingRequest.pause, .resume, .switch, .stop] {
            router.post("recordings/:id/\(action.rawValue)") { _, context in
                let id = try parameter("id", context)
                return json(try await offload { try service.request(action, recording: id) })
            }
        }
    }

    /// Runs a call that blocks (a recording that starts or finishes waits for
    /// its files, a photo for its frames, a time-lapse for minutes) away from
    /// the server's event loops and from Swift's cooperative threads: a
    /// detached task would still block one of those, which are as many as
    /// the cores, and a few slow requests would hold up every other.
    static func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }
}
