import CapctlCommands
import CapctlService
import Hummingbird

extension ServiceRouter {
    /// `/devices/{id}/controls` and `/devices/{id}/torch`: a camera's controls
    /// (as `capctl controls --json`), changing them (as `capctl set --json`),
    /// and its torch (as `capctl set-torch --json`).
    static func addDeviceRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing) {
        router.get("devices/:id/controls") { _, context in
            let id = try parameter("id", context)
            return json(try await offload { try service.controlsDocument(device: id) })
        }
        router.patch("devices/:id/controls") { request, context in
            let id = try parameter("id", context)
            let changes = try ControlChanges(json: try await object(request, context: context))
            // One-shot automatic modes settle for a second: off the event loop.
            return json(try await offload { try service.applyControls(device: id, changes) })
        }
        router.get("devices/:id/torch") { _, context in
            let id = try parameter("id", context)
            return json(try await offload { try service.setTorch(device: id, .status) })
        }
        router.post("devices/:id/torch") { request, context in
            let id = try parameter("id", context)
            let torch = try TorchRequest(json: try await object(request, context: context))
            return json(try await offload { try service.setTorch(device: id, torch) })
        }
    }
}
