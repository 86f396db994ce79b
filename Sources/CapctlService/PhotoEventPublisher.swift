import CapctlCommands
import CaptureKit

/// A `POST /photos` series' delegate: publishes a `photo` event for each
/// photo made and a `photo-failed` event for each that failed, with the
/// camera's id and the files' names inside the folder. It hears the photo
/// output's calls on the output's processing thread.
final class PhotoEventPublisher: PhotoCaptureDelegate, Sendable {
    private let camera: String
    private let events: ServiceEvents
    private let folder: ServiceFolder

    init(camera: String, events: ServiceEvents, folder: ServiceFolder) {
        self.camera = camera
        self.events = events
        self.folder = folder
    }

    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto) {
        var event = SnapReporter.Event("photo", photo.resolvedSettings)
        event.path = photo.path.map(folder.name)
        event.sidecar = photo.sidecarPath.map(folder.name)
        event.width = photo.dimensions.width
        event.height = photo.dimensions.height
        event.bytes = photo.byteCount
        event.timestamp = photo.timestamp.seconds
        event.sequence = photo.sequence
        events.publish(TaggedEvent(tag: ("camera", camera), event: event))
    }

    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?) {
        guard let error else { return }
        var event = SnapReporter.Event("photo-failed", settings)
        event.path = settings.outputPath.map(folder.name)
        event.error = error.description
        events.publish(TaggedEvent(tag: ("camera", camera), event: event))
    }
}
