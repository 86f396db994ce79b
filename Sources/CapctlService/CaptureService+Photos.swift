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

    /// Takes photos with `snap`'s settings, as JSON (see `PhotoSettingsRequest`),
    /// from the running camera: also while recordings run, which lose no
    /// frame (the photo output takes frames without holding capture back).
    /// Returns once the last photo is made, holding no thread meanwhile.
    package func takePhotos(_ settings: [String: JSONValue]) async throws(ServiceError) -> PhotoAnswer {
        let request = try PhotoSettingsRequest(settings, inputs: inputs, folder: folder)
        guard let output = photoOutputs.first(where: { $0.camera === request.camera.input })?.output else {
            throw ServiceError(.badRequest, "device \(request.camera.id) takes no photos")
        }
        try checkFiles(of: request)
        try checkSettings(of: request, output: output)
        let session = self.session
        let batch = ServicePhotoBatch(request: request, output: output, events: events, folder: folder) { session.isRunning }
        switch await batch.run() {
        case .failure(let error):
            throw serviceError(error)
        case .success(let photos):
            guard request.file != nil else {
                guard let photo = photos.first else { throw ServiceError(.failed, "the camera made no photo") }
                return .image(bytes: photo.fileDataRepresentation, contentType: Self.contentType(request.format),
                              headers: headers(photo, camera: request.camera.id))
            }
            return .files(PhotosDocument(camera: request.camera.id, photos: photos.map(document)))
        }
    }

    /// Refuses files that exist (409) or that a burst would write twice, before any photo is taken.
    private func checkFiles(of request: PhotoSettingsRequest) throws(ServiceError) {
        var seen = Set<String>()
        for file in try request.plannedFiles() {
            guard seen.insert(file).inserted else {
                throw ServiceError(.badRequest, "file '\(request.file?.name ?? "")' would write \(folder.name(file)) twice; add %n to it, such as 'shot-%3n.jpg'")
            }
            do throws(RecordingError) {
                try RecordingDestinationCheck.check(file, overwrites: false)
            } catch .outputExists {
                throw ServiceError(.conflict, "\(folder.name(file)) already exists; the service never overwrites a file")
            } catch {
                throw ServiceError(.badRequest, error.description)
            }
        }
    }

    /// Refuses settings the camera's format or light cannot meet, before any photo is taken.
    private func checkSettings(of request: PhotoSettingsRequest, output: PhotoOutput) throws(ServiceError) {
        guard let format = output.videoFormat ?? request.camera.input.videoFormat else {
            throw ServiceError(.unavailable, "camera \(request.camera.id) is not running")
        }
        do throws(PhotoError) {
            _ = try PhotoOutput.resolve(PhotoSettings(format: request.format, quality: request.quality, flashMode: request.flash), for: format)
        } catch {
            throw ServiceError(.badRequest, error.description)
        }
        if request.flash == .on && output.flashDevice == nil {
            throw ServiceError(.badRequest, "camera \(request.camera.id) (\(request.camera.input.source.path)) has no flash or torch the service can fire; use flash off or auto")
        }
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
