@testable import capctl_serve
@testable import CapctlService
import CapctlCommands
import CaptureKit
import Synchronization
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The HTTP layer over a stand-in service: each kind of refusal the service
/// can give becomes its status and one line; and the layer's own checks
/// (token, Origin, Referer, Host headers) refuse before the service is asked.
@Suite struct BoundaryTests {
    /// A service that refuses every operation with `failure`, and counts what it was asked.
    final class RefusingService: CaptureServing {
        let failure: ServiceError
        let asked = Mutex(0)
        let events = ServiceEvents()
        var folderPath: String { "/nowhere" }

        init(_ kind: ServiceError.Kind, _ message: String) { failure = ServiceError(kind, message) }

        private func refuse() -> ServiceError {
            asked.withLock { $0 += 1 }
            return failure
        }

        var sessionDocument: CaptureService.SessionDocument {
            .init(state: "running", started: "2026-01-01T00:00:00.000Z", uptime: 1, folder: folderPath, freeSpace: nil,
                  inputs: [], views: [], webrtc: [], webrtcAvailable: false, recordings: 0, activeRecordings: 0)
        }
        var inputDocuments: [CaptureService.InputDocument] { [] }
        func controlsDocument(device id: String) throws(ServiceError) -> ControlsDocument { throw refuse() }
        func applyControls(device id: String, _ changes: ControlChanges) throws(ServiceError) -> SetDocument { throw refuse() }
        func setTorch(device id: String, _ request: TorchRequest) throws(ServiceError) -> TorchStatusJSON { throw refuse() }
        func startRecording(_ request: StartRecordingRequest) throws(ServiceError) -> CaptureService.RecordingCreated { throw refuse() }
        func recordingList() -> RecordingListDocument { RecordingListDocument(recordings: []) }
        func recordingStatus(_ id: String) throws(ServiceError) -> RecordingDocument { throw refuse() }
        func request(_ request: CaptureService.RecordingRequest, recording id: String) throws(ServiceError) -> RecordingDocument { throw refuse() }
        func addMarker(_ marker: MarkerRequest, recording id: String) throws(ServiceError) -> RecordingReporter.MarkerEvent { throw refuse() }
        func takePhotos(_ request: PhotoRequest) async throws(ServiceError) -> CaptureService.PhotoAnswer { throw refuse() }
        func watch(_ query: [String: String]) throws(ServiceError) -> LiveViewer { throw refuse() }
        func snapshot(_ query: [String: String]) async throws(ServiceError) -> LiveViewFrame { throw refuse() }
        func startWebRTCView(camera id: String, audio: String?, offer: String) throws(ServiceError) -> CaptureService.WHEPAnswer { throw refuse() }
        func endWebRTCView(_ id: String) throws(ServiceError) { throw refuse() }
        func fileList() -> FileListDocument { FileListDocument(files: []) }
        func file(named name: String) throws(ServiceError) -> (path: String, bytes: Int64) { throw refuse() }
        func deleteFile(named name: String) throws(ServiceError) -> DeletedFileDocument { throw refuse() }
        func metricsExposition() -> PrometheusExposition { PrometheusExposition() }
        func shutdown() {}
    }

    @Test(arguments: [
        (ServiceError.Kind.badRequest, HTTPResponse.Status.badRequest),
        (.notFound, .notFound),
        (.conflict, .conflict),
        (.tooMany, .tooManyRequests),
        (.unavailable, .serviceUnavailable),
        (.failed, .internalServerError),
    ])
    func eachRefusalHasItsStatus(kind: ServiceError.Kind, status: HTTPResponse.Status) async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        let service = RefusingService(kind, "cannot, and this is why\nin two lines")
        try await setup.test(service) { client in
            for (method, uri, body) in [(HTTPRequest.Method.post, "/recordings", #"{"file": "x.mp4"}"#), (.get, "/recordings/rec-1", nil),
                                        (.post, "/recordings/rec-1/stop", nil), (.post, "/photos", "{}"),
                                        (.patch, "/devices/0/controls", #"{"brightness": 10}"#), (.get, "/files/a.mp4", nil),
                                        (.delete, "/files/a.mp4", nil), (.get, "/snapshot.jpg", nil), (.get, "/stream.mjpg", nil)] {
                let response = try await client.send(method, uri, json: body)
                #expect(response.status == status, "\(method) \(uri)")
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.error == "cannot, and this is why in two lines", "\(method) \(uri)")
            }
        }
        #expect(service.asked.withLock { $0 } == 9)
    }

    /// With a token, every request but the page must carry it (401 with a
    /// challenge otherwise); a GET may carry it as `access_token`, which the
    /// access log never shows.
    @Test func theTokenIsAskedForAndNeverLogged() async throws {
        let token = "s3cret-token-0123456789"
        let setup = try InProcessService(token: token)
        defer { setup.remove() }
        let service = RefusingService(.notFound, "none")
        try await setup.test(service) { client in
            let without = try await client.send(.get, "/session")
            #expect(without.status == .unauthorized)
            #expect(without.headers[.wwwAuthenticate] == "Bearer realm=\"capctl\"")
            let wrong = try await client.send(.get, "/session", headers: [.authorization: "Bearer not-it"])
            #expect(wrong.status == .unauthorized)
            let bearer = try await client.send(.get, "/session", headers: [.authorization: "Bearer \(token)"])
            #expect(bearer.status == .ok)
            let query = try await client.send(.get, "/session?access_token=\(token)")
            #expect(query.status == .ok)
            let postWithQuery = try await client.send(.post, "/recordings?access_token=\(token)", json: "{}")
            #expect(postWithQuery.status == .unauthorized)
            let page = try await client.send(.get, "/")
            #expect(page.status == .ok)
        }
        let log = try String(contentsOfFile: setup.accessLogPath, encoding: .utf8)
        #expect(log.split(separator: "\n").count == 6, "\(log)")
        #expect(!log.contains(token), "\(log)")
        #expect(log.contains("/session?access_token=REDACTED"), "\(log)")
        #expect(service.asked.withLock { $0 } == 0)
    }

    /// A request that changes something from another page is refused, by its
    /// Origin or, without one, its Referer; one of the service's own goes on.
    @Test func otherPagesMayNotChangeAnything() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        let service = RefusingService(.conflict, "asked")
        try await setup.test(service) { client in
            let foreign = try await client.send(.post, "/recordings", json: "{}", headers: [.origin: "https://evil.example"])
            #expect(foreign.status == .forbidden)
            #expect(foreign.error == "requests from the page at https://evil.example may not change anything on this service")
            let referer = try await client.send(.post, "/recordings", json: "{}", headers: [.referer: "https://evil.example/form.html"])
            #expect(referer.status == .forbidden)
            #expect(referer.error == "requests from the page at https://evil.example may not change anything on this service")
            let own = try await client.send(.post, "/recordings", json: #"{"file": "x.mp4"}"#, headers: [.origin: "http://localhost"])
            #expect(own.status == .conflict)
            let read = try await client.send(.get, "/recordings", headers: [.origin: "https://evil.example"])
            #expect(read.status == .ok)
        }
        #expect(service.asked.withLock { $0 } == 1)
    }

    /// A Host header besides the request's authority is a second Host (RFC 9112 §3.2): 400.
    @Test func aSecondHostIsRefused() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test(RefusingService(.conflict, "asked")) { client in
            let twice = try await client.send(.get, "/session", headers: [HTTPFields.Element.Name("Host")!: "evil.example"])
            #expect(twice.status == .badRequest)
            #expect(twice.error == "the request has more than one Host header; send one")
        }
    }
}
