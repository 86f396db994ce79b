import CapctlCommands
import CaptureKit

extension CaptureService {
    /// What `POST /photos` answers.
    package enum PhotoAnswer: Sendable {
        /// One photo without `file`: the image itself, its media type, and
        /// headers describing it (X-Capture-Time, X-Photo-Width …).
        case image(bytes: [UInt8], contentType: String, headers: [PhotoHeader])
        /// Photos written into the folder (status 201).
        case files(PhotosDocument)
    }

    /// One response header of a photo answered as an image.
    package struct PhotoHeader: Sendable {
        package let name: String
        package let value: String
    }

    /// A photo written into the folder, as `POST /photos` lists it.
    package struct PhotoDocument: Encodable, Sendable {
        /// The photo's unique ID (its events carry it).
        var id: Int64
        /// Its name inside the folder.
        var file: String
        /// A raw photo's JSON description, beside it.
        var sidecar: String?
        var bytes: Int
        var width: Int
        var height: Int
        var format: String
        /// When the frame was captured: UTC, ISO 8601 with milliseconds.
        var time: String
        /// The same, on CLOCK_MONOTONIC in seconds (as the events' timestamp).
        var timestamp: Double
        var sequence: UInt64
        var flashFired: Bool
        /// Whether the camera's frame was written as it came (MJPEG as JPEG, raw).
        var passthrough: Bool
    }

    /// Takes photos with `snap`'s settings (see `PhotoRequest`) as a
    /// `CapturePhotoSeries` on the running camera: also while recordings run,
    /// which lose no frame (the photo output takes frames without holding
    /// capture back). Returns once the last photo is made, holding no thread meanwhile.
    package func takePhotos(_ request: PhotoRequest) async throws(ServiceError) -> PhotoAnswer {
        let camera = try photoCamera(request.camera)
        guard let output = photoOutputs.first(where: { $0.camera === camera.input })?.output else {
            throw ServiceError(.badRequest, "device \(camera.id) takes no photos")
        }
        var settings = request.settings
        if let name = settings.destination { settings.destination = try folder.path(forTemplate: name) }
        let series: CapturePhotoSeries
        do throws(CapturePhotoSeries.SettingsError) {
            series = try CapturePhotoSeries(settings, output: output,
                                            delegate: PhotoEventPublisher(camera: camera.id, events: events, folder: folder))
        } catch {
            // The files it names are the folder's.
            var problem = error
            if case .writtenTwice(let path) = error.problem { problem = CapturePhotoSeries.SettingsError(error.setting, .writtenTwice(folder.name(path))) }
            throw ServiceError(.badRequest, problem.message(naming: PhotoRequest.key))
        }
        guard let format = output.videoFormat ?? camera.input.videoFormat, session.isRunning else {
            throw ServiceError(.unavailable, "camera \(camera.id) is not running")
        }
        do throws(PhotoError) {
            try series.checkDestination()
        } catch .cannotWrite(let path, let reason) {
            // A file that cannot be created is the request's name, before any photo: 400, not 500.
            throw ServiceError(.badRequest, "\(folder.name(path)): \(reason)")
        } catch {
            throw serviceError(error)
        }
        do throws(PhotoError) { try series.checkSettings(for: format) } catch { throw serviceError(error) }
        if settings.flashMode == .on && output.flashDevice == nil {
            throw ServiceError(.badRequest, "camera \(camera.id) (\(camera.input.source.path)) has no flash or torch the service can fire; use flash off or auto")
        }
        do throws(PhotoError) { try series.start() } catch { throw serviceError(error) }
        // A client that goes away asks for no further photo (those asked for are still made).
        let result = await withTaskCancellationHandler { await series.finished() } onCancel: { series.stop() }
        if let failure = result.failures.first { throw serviceError(failure) }
        guard result.isComplete else {
            throw ServiceError(.unavailable, "the service is stopping: the camera no longer runs (\(result.photos.count) of \(result.requested) photos taken)")
        }
        guard settings.destination != nil else {
            guard let photo = result.photos.first else { throw ServiceError(.failed, "the camera made no photo") }
            return .image(bytes: photo.fileDataRepresentation, contentType: Self.contentType(series.format),
                          headers: headers(photo, camera: camera.id))
        }
        return .files(PhotosDocument(camera: camera.id, photos: result.photos.map(document)))
    }

    /// The session input `id` names (default: the first camera).
    private func photoCamera(_ id: String?) throws(ServiceError) -> (id: String, input: CaptureInput) {
        guard let id else {
            guard let index = inputs.firstIndex(where: { $0.mediaType == .video }) else {
                throw ServiceError(.badRequest, "the service has no camera to take photos with")
            }
            return (String(index), inputs[index])
        }
        guard let index = Int(id), inputs.indices.contains(index) else {
            throw ServiceError(.badRequest, "camera must be a device id GET /devices lists (from 0), not '\(id)'")
        }
        guard inputs[index].mediaType == .video else { throw ServiceError(.badRequest, "device \(id) is a microphone, not a camera") }
        return (id, inputs[index])
    }

    private func document(_ photo: CapturedPhoto) -> PhotoDocument {
        let settings = photo.resolvedSettings
        return PhotoDocument(id: settings.uniqueID, file: photo.path.map(folder.name) ?? "", sidecar: photo.sidecarPath.map(folder.name),
                             bytes: photo.byteCount, width: photo.dimensions.width, height: photo.dimensions.height,
                             format: settings.format.rawValue, time: Self.captureTime(photo), timestamp: photo.timestamp.seconds,
                             sequence: photo.sequence, flashFired: settings.flashFired, passthrough: settings.isPassthrough)
    }

    private func headers(_ photo: CapturedPhoto, camera: String) -> [PhotoHeader] {
        let settings = photo.resolvedSettings
        var fields: [(String, String)] = [
            ("X-Capture-Time", Self.captureTime(photo)),
            ("X-Capture-Timestamp", String(photo.timestamp.seconds)),
            ("X-Photo-ID", String(settings.uniqueID)),
            ("X-Photo-Width", String(photo.dimensions.width)),
            ("X-Photo-Height", String(photo.dimensions.height)),
            ("X-Photo-Format", settings.format.rawValue),
            ("X-Photo-Sequence", String(photo.sequence)),
            ("X-Flash-Fired", settings.flashFired ? "true" : "false"),
            ("X-Camera", camera),
        ]
        if let raw = photo.rawDescription {
            fields += [("X-Raw-Fourcc", raw.fourcc), ("X-Raw-Pixel-Format", raw.pixelFormat), ("X-Raw-Bytes-Per-Line", String(raw.bytesPerLine))]
        }
        return fields.map { PhotoHeader(name: $0.0, value: $0.1) }
    }

    private static func captureTime(_ photo: CapturedPhoto) -> String {
        EventTime.time(ofMonotonic: photo.timestamp.converted(toTimescale: MonotonicClock.timescale).value)
    }

    static func contentType(_ format: PhotoFileFormat) -> String {
        switch format {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .raw: return "application/octet-stream"
        }
    }

    /// A failed photo as a refusal: the settings (400), a file that appeared
    /// meanwhile (409), capture that ended (503), or making the photo failed (500).
    private func serviceError(_ error: PhotoError) -> ServiceError {
        switch error {
        case .settingsReused, .unsupported, .flash: return ServiceError(.badRequest, error.description)
        case .outputExists(let path): return ServiceError(.conflict, "\(folder.name(path)) already exists; the service never overwrites a file")
        case .captureEnded: return ServiceError(.unavailable, error.description)
        case .cannotWrite(let path, let reason): return ServiceError(.failed, "\(folder.name(path)): \(reason)")
        case .processing: return ServiceError(.failed, error.description)
        }
    }
}
