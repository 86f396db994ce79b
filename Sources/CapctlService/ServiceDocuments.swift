/// The documents the service answers besides those of the capture session
/// (`CaptureService.SessionDocument`) and of a recording (`RecordingDocument`):
/// plain `Encodable` values, which the HTTP layer encodes as JSON with sorted keys.

/// `GET /recordings`: every recording since the service started, oldest first.
package struct RecordingListDocument: Encodable, Sendable {
    package var recordings: [RecordingDocument]
}

/// `GET /files`: every file in the folder and its subfolders, by name.
package struct FileListDocument: Encodable, Sendable {
    package var files: [FileDocument]
}

/// A file of the folder, as `GET /files` lists it.
package struct FileDocument: Encodable, Sendable {
    /// Its name inside the folder.
    package var name: String
    package var bytes: Int64
    /// When it last changed: UTC, ISO 8601.
    package var modified: String
    /// Whether a running recording writes it (it cannot be deleted until that ends).
    package var recording: Bool
}

/// `DELETE /files/NAME`: what was deleted.
package struct DeletedFileDocument: Encodable, Sendable {
    package var deleted: String
    package var bytes: Int64
}

/// `POST /photos` with a file: the photos written into the folder (201).
package struct PhotosDocument: Encodable, Sendable {
    /// The camera's device ID.
    package var camera: String
    package var photos: [CaptureService.PhotoDocument]
}
