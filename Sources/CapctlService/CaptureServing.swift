import CapctlCommands
import CaptureKit

/// What the HTTP layer asks of the service: one call per operation, each
/// answering a document (or a refusal, `ServiceError`, whose kind the HTTP
/// layer turns into a status). `CaptureService` is the real one, over the
/// devices; the router takes any, so that its routes are tested in-process
/// against a stand-in as well as against the real service.
package protocol CaptureServing: Sendable {
    /// The service's events, for `GET /events`.
    var events: ServiceEvents { get }
    /// The folder's absolute path (for `service-started`).
    var folderPath: String { get }

    // Session and devices
    var sessionDocument: CaptureService.SessionDocument { get }
    var inputDocuments: [CaptureService.InputDocument] { get }
    func controlsDocument(device id: String) throws(ServiceError) -> ControlsDocument
    func applyControls(device id: String, _ changes: ControlChanges) throws(ServiceError) -> SetDocument
    func setTorch(device id: String, _ request: TorchRequest) throws(ServiceError) -> TorchStatusJSON

    // Recordings
    func startRecording(_ request: StartRecordingRequest) throws(ServiceError) -> CaptureService.RecordingCreated
    func recordingList() -> RecordingListDocument
    func recordingStatus(_ id: String) throws(ServiceError) -> RecordingDocument
    func request(_ request: CaptureService.RecordingRequest, recording id: String) throws(ServiceError) -> RecordingDocument
    func addMarker(_ marker: MarkerRequest, recording id: String) throws(ServiceError) -> RecordingReporter.MarkerEvent

    // Photos, live views
    func takePhotos(_ request: PhotoRequest) async throws(ServiceError) -> CaptureService.PhotoAnswer
    func watch(_ query: [String: String]) throws(ServiceError) -> LiveViewer
    func snapshot(_ query: [String: String]) async throws(ServiceError) -> LiveViewFrame
    /// Answers a WHEP offer for a camera (and a microphone: its id, "none", or nil for the first).
    func startWebRTCView(camera id: String, audio: String?, offer: String) throws(ServiceError) -> CaptureService.WHEPAnswer
    /// Ends a WHEP viewer (its DELETE).
    func endWebRTCView(_ id: String) throws(ServiceError)

    // Files
    func fileList() -> FileListDocument
    func file(named name: String) throws(ServiceError) -> (path: String, bytes: Int64)
    func deleteFile(named name: String) throws(ServiceError) -> DeletedFileDocument

    /// The numbers `GET /metrics` answers (the HTTP layer adds its own).
    func metricsExposition() -> PrometheusExposition
    /// Finishes every recording and stops the capture (once; later calls return at once).
    func shutdown()
}

extension CaptureService: CaptureServing {
    package var folderPath: String { folder.root }
}
