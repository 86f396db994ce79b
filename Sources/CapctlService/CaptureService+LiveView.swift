import CapctlCommands
import CaptureKit

extension CaptureService {
    /// A live view's query (`camera`, `width`, `height`, `fps`, `quality`),
    /// checked: the camera (an input id, default the first camera) and the
    /// view's settings. Other parameters (`access_token`, a cache buster) are left alone.
    package func liveViewRequest(_ query: [String: String]) throws(ServiceError) -> (camera: CaptureInput, settings: LiveViewSettings) {
        let camera: CaptureInput
        if let id = query["camera"] {
            camera = try input(id)
            guard camera.mediaType == .video else {
                throw ServiceError(.notFound, "device \(id) is a microphone; GET /devices lists the cameras (mediaType video)")
            }
        } else {
            guard let first = inputs.first(where: { $0.mediaType == .video }) else {
                throw ServiceError(.notFound, "the service has no camera")
            }
            camera = first
        }
        var settings = LiveViewSettings()
        settings.width = try Self.integer("width", query)
        settings.height = try Self.integer("height", query)
        settings.quality = try Self.integer("quality", query) ?? settings.quality
        if let text = query["fps"] {
            guard let rate = Self.rate(text) else {
                throw ServiceError(.badRequest, "fps=\(text) is not a rate; give frames per second such as 15, 0.5 or 1/10")
            }
            settings.frameRate = rate
        }
        return (camera, settings)
    }

    /// A new viewer of the view a query asks for; `close()` it when the client goes.
    package func watch(_ query: [String: String]) throws(ServiceError) -> LiveViewer {
        let (camera, settings) = try liveViewRequest(query)
        do {
            return try liveView.view(of: camera, settings: settings)
        } catch {
            throw Self.serviceError(error)
        }
    }

    /// The newest picture of the view a query asks for (its rate ignored).
    package func snapshot(_ query: [String: String]) async throws(ServiceError) -> LiveViewFrame {
        let (camera, settings) = try liveViewRequest(query)
        do {
            return try await liveView.snapshot(of: camera, settings: settings)
        } catch {
            throw Self.serviceError(error)
        }
    }

    private static func serviceError(_ error: LiveViewError) -> ServiceError {
        switch error {
        case .notACamera: return ServiceError(.notFound, "not a camera; GET /devices lists them")
        case .invalidSettings(let reason): return ServiceError(.badRequest, reason)
        case .tooManyViewers(let limit):
            return ServiceError(.unavailable, "\(limit) viewers are watching, the most this service takes (--max-viewers); try again later")
        case .notRunning, .timedOut: return ServiceError(.unavailable, error.description)
        case .encodingFailed: return ServiceError(.failed, error.description)
        }
    }

    private static func integer(_ name: String, _ query: [String: String]) throws(ServiceError) -> Int? {
        guard let text = query[name] else { return nil }
        guard let value = Int(text) else { throw ServiceError(.badRequest, "\(name)=\(text) is not a whole number") }
        return value
    }

    /// `15`, `0.5` or `1/10` frames per second.
    private static func rate(_ text: String) -> Double? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let numerator = Double(parts[0]) else { return nil }
        guard parts.count == 2 else { return numerator }
        guard let denominator = Double(parts[1]), denominator != 0 else { return nil }
        return numerator / denominator
    }
}
