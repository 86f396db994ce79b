@testable import capctl_serve
import CapctlService
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Every route of the service in this process, over the real `CaptureService`
/// on the test pattern and tone: statuses, bodies and refusals, as a client
/// sees them, without a socket or a spawned process.
@Suite(.serialized) struct RouteTests {
    @Test func theSessionAndItsDevices() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        try await service.test { client, _ in
            let session = try await client.send(.get, "/session")
            #expect(session.status == .ok)
            #expect(session.headers[.contentType] == "application/json")
            let document = try session.object
            #expect(document["state"] as? String == "running")
            #expect(document["folder"] as? String == service.configuration.folder)
            let inputs = try #require(document["inputs"] as? [[String: Any]])
            #expect(inputs.map { $0["device"] as? String } == ["test-pattern", "test-tone"])

            let devices = try await client.send(.get, "/devices")
            #expect(devices.status == .ok)
            #expect((try devices.object["devices"] as? [[String: Any]])?.count == 2)

            let openAPI = try await client.send(.get, "/openapi.json")
            #expect(openAPI.status == .ok)
            #expect(try openAPI.object["openapi"] as? String != nil)
        }
    }

    @Test func unknownPathsAndMethodsSayWhatToDo() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        try await service.test { client, _ in
            let missing = try await client.send(.get, "/nothing-here")
            #expect(missing.status == .notFound)
            #expect(missing.error == "no such path: /nothing-here; GET /openapi.json describes the API")
            // A path the service has, asked with another method: 405, with the methods it takes.
            for (method, path, allowed) in [(HTTPRequest.Method.put, "/session", "GET"), (.put, "/recordings", "GET, POST"),
                                             (.get, "/recordings/rec-1/stop", "POST"), (.delete, "/files", "GET"),
                                             (.put, "/files/a/b.mp4", "DELETE, GET, HEAD"), (.delete, "/devices/0/torch", "GET, POST")] {
                let wrongMethod = try await client.send(method, path)
                #expect(wrongMethod.status == .methodNotAllowed, "\(method) \(path): \(wrongMethod.status)")
                #expect(wrongMethod.headers[.allow] == allowed, "\(method) \(path)")
                #expect(wrongMethod.error == "\(method) is not taken on \(path); it takes \(allowed)")
            }
            #expect(try await client.send(.put, "/nothing-here").status == .notFound)
            let recording = try await client.send(.get, "/recordings/rec-9")
            #expect(recording.status == .notFound)
            #expect(recording.error == "no recording 'rec-9'; GET /recordings lists them")
        }
    }

    /// A recording from its request to its file: 201 with its Location, its
    /// progress, a marker, a pause and a resume, its stop, and its file listed.
    @Test func aRecordingThroughItsRoutes() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        try await service.test { client, _ in
            let created = try await client.send(.post, "/recordings", json: #"{"file": "clip.mp4", "maxDuration": "10m"}"#)
            #expect(created.status == .created, "\(created.error)")
            let id = try #require(try created.object["id"] as? String)
            #expect(created.headers[.location] == "/recordings/\(id)")
            #expect(try created.object["file"] as? String == "clip.mp4")

            let status = try await client.send(.get, "/recordings/\(id)")
            #expect(status.status == .ok)
            #expect(try status.object["state"] as? String == "running")
            // Its first frames, polled: a recording stopped before any has no file.
            let progress = try await client.poll("/recordings/\(id)", until: { (($0["progress"] as? [String: Any])?["frames"] as? Int ?? 0) >= 3 })
            #expect(progress != nil, "no frames recorded in 60 s")

            let marker = try await client.send(.post, "/recordings/\(id)/markers", json: #"{"title": "door"}"#)
            #expect(marker.status == .created, "\(marker.error)")
            #expect(try marker.object["title"] as? String == "door")

            let paused = try await client.send(.post, "/recordings/\(id)/pause")
            #expect(paused.status == .ok, "\(paused.error)")
            let resumed = try await client.send(.post, "/recordings/\(id)/resume")
            #expect(resumed.status == .ok, "\(resumed.error)")

            let stopped = try await client.send(.post, "/recordings/\(id)/stop")
            #expect(stopped.status == .ok, "\(stopped.error)")
            let document = try stopped.object
            #expect(document["state"] as? String == "finished")
            let finished = try #require(document["finished"] as? [String: Any])
            #expect(finished["reason"] as? String == "stopped")
            #expect(finished["files"] as? [String] == ["clip.mp4"])
            #expect((finished["frames"] as? Int ?? 0) >= 3)
            #expect((document["markers"] as? [[String: Any]])?.count == 1)

            let again = try await client.send(.post, "/recordings/\(id)/stop")
            #expect(again.status == .conflict)
            #expect(again.error == "recording \(id) has finished")

            let list = try await client.send(.get, "/recordings")
            #expect((try list.object["recordings"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])

            let files = try await client.send(.get, "/files")
            let listed = try #require(try files.object["files"] as? [[String: Any]])
            #expect(listed.map { $0["name"] as? String } == ["clip.mp4"])
            #expect(listed.first?["recording"] as? Bool == false)
            #expect((listed.first?["bytes"] as? Int ?? 0) > 0)
        }
    }

    /// Settings the recording cannot take are refused with the JSON key named,
    /// before a file exists; a file that exists is never overwritten (409).
    @Test func recordingSettingsThatCannotWork() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        #expect(FileManager.default.createFile(atPath: service.folder + "/taken.mp4", contents: Data([1, 2, 3])))
        try await service.test { client, _ in
            let unknown = try await client.send(.post, "/recordings", json: #"{"file": "a.mp4", "frobnicate": 1}"#)
            #expect(unknown.status == .badRequest)
            #expect(unknown.error.contains("frobnicate"), "\(unknown.error)")

            let overlay = try await client.send(.post, "/recordings", json: #"{"file": "a.mp4", "overlay": "x"}"#)
            #expect(overlay.status == .badRequest)
            #expect(overlay.error.hasPrefix("overlay is not taken here"), "\(overlay.error)")

            let notText = try await client.send(.post, "/recordings", json: #"{"file": 3}"#)
            #expect(notText.status == .badRequest)
            #expect(notText.error.hasPrefix("file must be a string"), "\(notText.error)")

            let notJSON = try await client.send(.post, "/recordings", json: "file=a.mp4")
            #expect(notJSON.status == .badRequest)
            #expect(notJSON.error.hasPrefix("the body is not a JSON object"), "\(notJSON.error)")

            let taken = try await client.send(.post, "/recordings", json: #"{"file": "taken.mp4"}"#)
            #expect(taken.status == .conflict)
            #expect(taken.error.contains("never overwrites"), "\(taken.error)")

            let outside = try await client.send(.post, "/recordings", json: #"{"file": "../out.mp4"}"#)
            #expect(outside.status == .badRequest)
            #expect(!FileManager.default.fileExists(atPath: service.folder + "/../out.mp4"))

            #expect(try FileManager.default.contentsOfDirectory(atPath: service.folder) == ["taken.mp4"])
        }
    }

    /// A body must say it is JSON (415 otherwise), and stay within 64 KiB (413).
    @Test func bodiesMustBeDeclaredJSONAndSmall() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        try await service.test { client, _ in
            let plain = try await client.execute(uri: "/recordings", method: .post, headers: [.contentType: "text/plain"],
                                                 body: ByteBuffer(string: #"{"file": "a.mp4"}"#))
            #expect(plain.status == .unsupportedMediaType)
            #expect(plain.error == "a request body must be JSON, sent with 'Content-Type: application/json'; it came as 'text/plain'")
            let large = try await client.send(.post, "/recordings", json: #"{"file": "a.mp4", "x": ""# + String(repeating: "a", count: 70_000) + #""}"#)
            #expect(large.status == .contentTooLarge)
            #expect(large.error == "the request body is larger than 64 KiB")
            #expect(try FileManager.default.contentsOfDirectory(atPath: service.folder).isEmpty)
        }
    }

    /// `/files/NAME`: percent-decoded once, ranges, HEAD, DELETE; names outside
    /// the folder or holding control characters are refused.
    @Test func filesByName() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        #expect(FileManager.default.createFile(atPath: service.folder + "/a b.txt", contents: Data("0123456789".utf8)))
        try await service.test { client, _ in
            let whole = try await client.send(.get, "/files/a%20b.txt")
            #expect(whole.status == .ok)
            #expect(String(buffer: whole.body) == "0123456789")
            #expect(whole.headers[.acceptRanges] == "bytes")

            let range = try await client.send(.get, "/files/a%20b.txt", headers: [.range: "bytes=2-4"])
            #expect(range.status == .partialContent)
            #expect(String(buffer: range.body) == "234")
            #expect(range.headers[.contentRange] == "bytes 2-4/10")

            let beyond = try await client.send(.get, "/files/a%20b.txt", headers: [.range: "bytes=20-30"])
            #expect(beyond.status == .rangeNotSatisfiable)

            let head = try await client.send(.head, "/files/a%20b.txt")
            #expect(head.status == .ok)
            #expect(head.headers[.contentLength] == "10")
            #expect(head.body.readableBytes == 0)

            let traversal = try await client.send(.get, "/files/..%2F..%2Fetc%2Fpasswd")
            #expect(traversal.status == .notFound)
            let control = try await client.send(.get, "/files/a%0Ab.txt")
            #expect(control.status == .badRequest)
            #expect(!control.error.contains("\n"))
            let malformed = try await client.send(.get, "/files/a%2")
            #expect(malformed.status == .badRequest)

            let deleted = try await client.send(.delete, "/files/a%20b.txt")
            #expect(deleted.status == .ok)
            #expect(try deleted.object["deleted"] as? String == "a b.txt")
            #expect(try deleted.object["bytes"] as? Int == 10)
            #expect(!FileManager.default.fileExists(atPath: service.folder + "/a b.txt"))
            let gone = try await client.send(.delete, "/files/a%20b.txt")
            #expect(gone.status == .notFound)
        }
    }

    /// One photo without a file is the answer itself; with a file, written and listed (201).
    @Test func photos() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        try await service.test { client, _ in
            let image = try await client.send(.post, "/photos", json: #"{"format": "jpeg"}"#)
            #expect(image.status == .ok, "\(image.error)")
            #expect(image.headers[.contentType] == "image/jpeg")
            #expect(Array(image.body.readableBytesView.prefix(2)) == [0xFF, 0xD8])
            #expect(image.headers[HTTPFields.Element.Name("X-Photo-Width")!] == "640")

            let written = try await client.send(.post, "/photos", json: #"{"file": "shot-%n.png", "format": "png", "count": 2}"#)
            #expect(written.status == .created, "\(written.error)")
            let photos = try #require(try written.object["photos"] as? [[String: Any]])
            #expect(photos.map { $0["file"] as? String } == ["shot-1.png", "shot-2.png"])
            for name in ["shot-1.png", "shot-2.png"] {
                #expect(FileManager.default.fileExists(atPath: service.folder + "/" + name))
            }

            let burst = try await client.send(.post, "/photos", json: #"{"count": 3}"#)
            #expect(burst.status == .badRequest)
            let camera = try await client.send(.post, "/photos", json: #"{"camera": "7"}"#)
            #expect(camera.status == .badRequest)
            #expect(camera.error == "camera must be a device id GET /devices lists (from 0), not '7'")
        }
    }

    /// Controls of a camera that has none (the test pattern), and a torch it lacks.
    @Test func controlsAndTorchOfACameraWithoutThem() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        try await service.test { client, _ in
            let controls = try await client.send(.get, "/devices/0/controls")
            #expect(controls.status == .ok)
            #expect((try controls.object["classes"] as? [Any])?.isEmpty == true)
            #expect((try controls.object["device"] as? [String: Any])?["hasTorch"] as? Bool == false)
            let missing = try await client.send(.get, "/devices/9/controls")
            #expect(missing.status == .notFound, "\(missing.error)")
            let torch = try await client.send(.post, "/devices/0/torch", json: #"{"on": true}"#)
            #expect([.badRequest, .serviceUnavailable].contains(torch.status), "\(torch.status) \(torch.error)")
        }
    }

    /// `/snapshot.jpg` answers the camera's newest picture; `/metrics` the numbers in Prometheus's text format.
    @Test func snapshotAndMetrics() async throws {
        let service = try InProcessService()
        defer { service.remove() }
        try await service.test { client, _ in
            let snapshot = try await client.send(.get, "/snapshot.jpg?width=320")
            #expect(snapshot.status == .ok, "\(snapshot.error)")
            #expect(snapshot.headers[.contentType] == "image/jpeg")
            #expect(Array(snapshot.body.readableBytesView.prefix(2)) == [0xFF, 0xD8])

            let metrics = try await client.send(.get, "/metrics")
            #expect(metrics.status == .ok)
            #expect(metrics.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = String(buffer: metrics.body)
            #expect(text.contains("# TYPE capctl_input_frames_captured_total counter"), "\(text.prefix(400))")
        }
    }
}
