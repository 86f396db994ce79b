import CapctlService
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The service's photos (`POST /photos`), camera controls
/// (`/devices/{id}/controls`) and torch (`/devices/{id}/torch`) through its
/// routes in this process, over the real `CaptureService` on the test pattern
/// and test tone. The test pattern has no controls and no light: changing them
/// for real needs a camera with controls (vivid, in the VM suite).
@Suite(.serialized) struct PhotoRouteTests {
    // MARK: Photos

    @Test func onePhotoComesInTheResponse() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let response = try await client.send(.post, "/photos", json: "{}")
            #expect(response.status == .ok)
            #expect(response.header("Content-Type") == "image/jpeg")
            #expect(response.header("X-Photo-Width") == "640")
            #expect(response.header("X-Photo-Height") == "480")
            #expect(response.header("X-Camera") == "0")
            #expect(response.header("X-Capture-Time")?.hasSuffix("Z") == true)
            #expect(Int(response.header("Content-Length") ?? "") == response.body.readableBytes)
            let bytes = [UInt8](response.data)
            #expect(bytes.prefix(2) == [0xFF, 0xD8], "JPEG starts with SOI")
            #expect(bytes.suffix(2) == [0xFF, 0xD9], "JPEG ends with EOI")
            let saved = setup.folder + "-photo.jpg"
            try response.data.write(to: URL(fileURLWithPath: saved))
            defer { try? FileManager.default.removeItem(atPath: saved) }
            #expect(try probedSize(saved) == "640x480")
            #expect(files(in: setup.folder).isEmpty, "a photo without file writes nothing into the folder")
            let event = await log.wait("photo")
            #expect(event?["camera"] as? String == "0")
            #expect(event?["bytes"] as? Int == bytes.count)
            #expect(event?["path"] == nil)
        }
    }

    @Test func aBurstIsWrittenIntoTheFolder() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let response = try await client.send(.post, "/photos", json: #"{"count": 3, "file": "shot-%3n.jpg", "quality": 80}"#)
            #expect(response.status == .created, "\(response.error)")
            let answer = try response.object
            #expect(answer["camera"] as? String == "0")
            let photos = try #require(answer["photos"] as? [[String: Any]])
            #expect(photos.compactMap { $0["file"] as? String } == ["shot-001.jpg", "shot-002.jpg", "shot-003.jpg"])
            #expect(files(in: setup.folder) == ["shot-001.jpg", "shot-002.jpg", "shot-003.jpg"])
            var sequences: [Int] = []
            for photo in photos {
                let name = try #require(photo["file"] as? String)
                let size = try FileManager.default.attributesOfItem(atPath: setup.folder + "/" + name)[.size] as? Int
                #expect(photo["bytes"] as? Int == size)
                #expect(photo["width"] as? Int == 640 && photo["height"] as? Int == 480)
                #expect((photo["time"] as? String)?.hasSuffix("Z") == true)
                #expect(try probedSize(setup.folder + "/" + name) == "640x480")
                sequences.append(photo["sequence"] as? Int ?? -1)
            }
            #expect(sequences == sequences.sorted() && Set(sequences).count == 3, "each photo is a later frame")
            #expect(await log.wait("photo", where: { $0["path"] as? String == "shot-003.jpg" }) != nil)
            #expect(log.events("photo").compactMap { $0["path"] as? String } == ["shot-001.jpg", "shot-002.jpg", "shot-003.jpg"])
        }
    }

    @Test func aPhotoWhileRecordingCostsTheRecordingNoFrame() async throws {
        // The camera alone: a test tone late on a loaded machine loses samples
        // in real time whatever the photos do, while the test pattern loses a
        // frame only when a consumer holds back its buffers (what a stalling
        // photo would do).
        let setup = try InProcessService(["--video", "test-pattern"])
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let started = try await client.send(.post, "/recordings", json: #"{"file": "rec.mp4"}"#)
            #expect(started.status == .created, "\(started.error)")
            let id = try #require(try started.object["id"] as? String)
            // Photos once it is recording.
            #expect(try await client.waitForFrames(15, recording: id) != nil)
            let photo = try await client.send(.post, "/photos", json: "{}")
            #expect(photo.status == .ok)
            let burst = try await client.send(.post, "/photos", json: #"{"count": 3, "file": "during-%n.png"}"#)
            #expect(burst.status == .created, "\(burst.error)")
            // Taken while it ran; stopped once it holds 3 s of frames.
            #expect(try await client.send(.get, "/recordings/\(id)").object["state"] as? String == "running")
            #expect(try await client.waitForFrames(90, recording: id) != nil)
            #expect(try await client.send(.post, "/recordings/\(id)/stop").status == .ok)
            let finished = try #require(await log.wait("finished", recording: id))
            // Nothing of the recording's own held a frame back. (The camera itself may drop a
            // few when this process's other tests starve it; those are reported and counted.)
            #expect(finished["droppedByQueue"] as? Int == 0, "\(finished)")
            #expect(finished["droppedByWriter"] as? Int == 0, "\(finished)")
            #expect(finished["droppedBeforeKeyframe"] as? Int == 0, "\(finished)")
            let frames = try #require(finished["frames"] as? Int)
            #expect(try decodedFrames(setup.folder + "/rec.mp4") == frames)
            let duration = try #require(finished["duration"] as? Double), dropped = try #require(finished["droppedFrames"] as? Int)
            #expect(abs(frames + dropped - Int((duration * 30).rounded())) <= 2, "\(frames) frames + \(dropped) dropped in \(duration) s")
            #expect(frames >= 90, "3 s at 30 fps")
            #expect(files(in: setup.folder) == ["during-1.png", "during-2.png", "during-3.png", "rec.mp4"])
        }
    }

    @Test func eachCameraHasItsOwnPhotos() async throws {
        let setup = try InProcessService(["--video", "test-pattern", "--video", "test-pattern,size=320x240"])
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let first = try await client.send(.post, "/photos", json: #"{"camera": 0}"#)
            #expect(first.status == .ok && first.header("X-Photo-Width") == "640" && first.header("X-Camera") == "0")
            let second = try await client.send(.post, "/photos", json: #"{"camera": "1", "file": "second.png"}"#)
            #expect(second.status == .created, "\(second.error)")
            #expect(try probedSize(setup.folder + "/second.png") == "320x240")
            let event = await log.wait("photo", where: { $0["path"] as? String == "second.png" })
            #expect(event?["camera"] as? String == "1")
        }
    }

    @Test func waitingTimeLapsesHoldNoOtherRequestBack() async throws {
        let setup = try InProcessService(["--video", "test-pattern"])
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            // More waiting requests than the machine has cores (and the pool threads). Their
            // interval leaves a photo asked for meanwhile 10 s to come: on a busy machine,
            // where this process's other tests starve it, one took 3.4 s.
            let lapses = (1...6).map { n in
                Task { try await client.send(.post, "/photos", json: #"{"count": 2, "interval": "10s", "file": "lapse\#(n)-%n.jpg"}"#) }
            }
            #expect(await log.wait("photo") != nil)
            let single = try await client.send(.post, "/photos", json: "{}")
            #expect(single.status == .ok)
            #expect(try await client.send(.get, "/session").status == .ok)
            let taken = try #require(Double(single.header("X-Capture-Timestamp") ?? ""))
            for lapse in lapses {
                let answer = try await lapse.value
                #expect(answer.status == .created, "\(answer.error)")
                let photos = try #require(try answer.object["photos"] as? [[String: Any]])
                let stamps = photos.compactMap { $0["timestamp"] as? Double }
                #expect(stamps.count == 2)
                // Media times: the photo asked for meanwhile was taken before any time-lapse's second one.
                #expect(taken < stamps[1])
                // 10 s apart, to the frame (a 30 fps frame's time either way).
                #expect(stamps[1] - stamps[0] >= 10 - 1.0 / 30 - 0.001)
            }
        }
    }

    @Test func badSettingsAreRefusedAndWriteNothing() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let cases: [(body: String, fragment: String)] = [
                (#"{"quality": 0}"#, "quality 0"),
                (#"{"quality": 101, "file": "q.jpg"}"#, "quality 101"),
                (#"{"format": "gif"}"#, "gif"),
                (#"{"file": "../x.jpg"}"#, ".."),
                (#"{"file": "/tmp/x.jpg"}"#, "absolute"),
                (#"{"file": "x.gif"}"#, "cannot tell the photo format"),
                (#"{"count": 0, "file": "c-%n.jpg"}"#, "count 0"),
                (#"{"count": 101, "file": "c-%n.jpg"}"#, "count 101"),
                (#"{"count": 3}"#, "needs file"),
                (#"{"interval": "1s", "file": "i.jpg"}"#, "interval needs count"),
                (#"{"interval": "soon", "count": 2, "file": "i-%n.jpg"}"#, "interval"),
                (#"{"flash": "on"}"#, "no flash"),
                (#"{"flash": "sometimes"}"#, "flash"),
                (#"{"format": "png", "quality": 50}"#, "quality applies to JPEG"),
                (#"{"camera": 1}"#, "microphone"),
                (#"{"camera": 9}"#, "camera"),
                (#"{"live": true}"#, "live"),
                (#"{"colour": "red"}"#, "unknown setting"),
                (#"[1, 2]"#, "JSON object"),
                // A width no file system's names can hold: refused before any photo, in a short line.
                (#"{"format": "png", "count": 8, "file": "x%428331c%2c.png"}"#, "wider than a file's name"),
                (#"{"file": "y-%300n.jpg"}"#, "wider than a file's name"),
                (#"{"count": "2", "format": "RAW", "file": "%%%%%p%87362474055655127c%9231c%%%1n%%%2897400029793607n%Y%%%03034n%%"}"#, "wider than a file's name"),
                (#"{"file": "z-%200n%200c.png"}"#, "at most 255"),
            ]
            for (body, fragment) in cases {
                let response = try await client.send(.post, "/photos", json: body)
                #expect(response.status == .badRequest, "\(body): \(response.status) \(response.error)")
                let message = response.error
                #expect(message.contains(fragment), "\(body): \(message.prefix(300))")
                #expect(!message.contains("\n") && message.utf8.count < 400, "\(body): \(message.utf8.count) bytes")
            }
            #expect(files(in: setup.folder).isEmpty)
            // A photo taken after them is the first the service reports.
            #expect(try await client.send(.post, "/photos", json: "{}").status == .ok)
            let first = try #require(await log.wait("photo"))
            #expect(log.events("photo").count == 1 && first["path"] == nil)
        }
    }

    @Test func anExistingFileIsNeverOverwritten() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try Data("mine".utf8).write(to: URL(fileURLWithPath: setup.folder + "/taken.jpg"))
        try Data("mine".utf8).write(to: URL(fileURLWithPath: setup.folder + "/b-2.jpg"))
        try await setup.test { client, _ in
            let one = try await client.send(.post, "/photos", json: #"{"file": "taken.jpg"}"#)
            #expect(one.status == .conflict, "\(one.error)")
            #expect(one.error.contains("taken.jpg"))
            // The second photo of a burst exists: the first is not taken either.
            let burst = try await client.send(.post, "/photos", json: #"{"count": 3, "file": "b-%n.jpg"}"#)
            #expect(burst.status == .conflict, "\(burst.error)")
        }
        #expect(files(in: setup.folder) == ["b-2.jpg", "taken.jpg"])
        #expect(try String(contentsOfFile: setup.folder + "/taken.jpg", encoding: .utf8) == "mine")
    }

    // MARK: Controls and torch

    @Test func aVirtualCameraHasNoControls() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, _ in
            let response = try await client.send(.get, "/devices/0/controls")
            #expect(response.status == .ok)
            let document = try response.object
            // What `capctl controls DEVICE --json` prints for it.
            let command = try capctl(["controls", "test-pattern", "--json"])
            #expect(command.status == 0)
            let expected = try #require(jsonObject(command.stdout), "\(command.stdout)")
            #expect(NSDictionary(dictionary: document).isEqual(to: expected), "\(String(buffer: response.body)) vs \(command.stdout)")
            #expect((document["classes"] as? [Any])?.isEmpty == true)

            let patch = try await client.send(.patch, "/devices/0/controls", json: #"{"brightness": 10}"#)
            #expect(patch.status == .badRequest)
            #expect(patch.error.contains("virtual camera"))

            #expect(try await client.send(.get, "/devices/1/controls").status == .badRequest, "a microphone has no camera controls")
            #expect(try await client.send(.get, "/devices/5/controls").status == .notFound)
            #expect(try await client.send(.patch, "/devices/5/controls", json: #"{"brightness": 10}"#).status == .notFound)
        }
    }

    @Test func aVirtualCameraHasNoTorch() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, _ in
            for body in [#"{"on": true}"#, #"{"level": 0.5}"#, #"{"on": false}"#] {
                let response = try await client.send(.post, "/devices/0/torch", json: body)
                #expect(response.status == .badRequest, "\(body): \(response.error)")
                #expect(response.error.contains("no torch"))
            }
            for body in [#"{"level": 2}"#, #"{"level": 0}"#, #"{"on": false, "level": 0.5}"#, #"{"on": "yes"}"#, #"{"bright": 1}"#] {
                #expect(try await client.send(.post, "/devices/0/torch", json: body).status == .badRequest, "\(body)")
            }
        }
    }
}
