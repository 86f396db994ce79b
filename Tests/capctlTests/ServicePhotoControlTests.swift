import Foundation
import Testing

/// `capctl serve`'s photos (`POST /photos`), camera controls
/// (`/devices/{id}/controls`) and torch (`/devices/{id}/torch`), against the
/// real service binary on the test pattern and test tone. The test pattern has
/// no controls and no light: changing them for real needs a camera with
/// controls (vivid, in the VM suite).
@Suite(.serialized) struct ServicePhotoControlTests {
    /// A folder outside the service's, for what a test saves of a response.
    final class Scratch {
        let path: String
        init() throws {
            var template = Array((NSTemporaryDirectory() + "/capctl-photo-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            path = String(cString: made)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// `WIDTHxHEIGHT` of a picture file, as ffprobe reads it.
    static func probedSize(_ path: String) throws -> String {
        try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0:s=x", path])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Photos

    @Test func onePhotoComesInTheResponse() throws {
        let service = try ServiceFixture()
        let response = try service.request("POST", "/photos", json: "{}")
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "image/jpeg")
        #expect(response.headers["x-photo-width"] == "640")
        #expect(response.headers["x-photo-height"] == "480")
        #expect(response.headers["x-camera"] == "0")
        #expect(response.headers["x-capture-time"]?.hasSuffix("Z") == true)
        #expect(Int(response.headers["content-length"] ?? "") == response.body.count)
        let bytes = [UInt8](response.body)
        #expect(bytes.prefix(2) == [0xFF, 0xD8], "JPEG starts with SOI")
        #expect(bytes.suffix(2) == [0xFF, 0xD9], "JPEG ends with EOI")
        let scratch = try Scratch()
        let saved = scratch.path + "/photo.jpg"
        try response.body.write(to: URL(fileURLWithPath: saved))
        #expect(try Self.probedSize(saved) == "640x480")
        #expect(service.files.isEmpty, "a photo without file writes nothing into the folder")
        let event = service.waitForEvent(timeout: 5) { $0["event"] as? String == "photo" }
        #expect(event?["camera"] as? String == "0")
        #expect(event?["bytes"] as? Int == bytes.count)
        #expect(event?["path"] == nil)
    }

    @Test func aBurstIsWrittenIntoTheFolder() throws {
        let service = try ServiceFixture()
        let response = try service.request("POST", "/photos", json: #"{"count": 3, "file": "shot-%3n.jpg", "quality": 80}"#)
        #expect(response.status == 201, "\(response.text)")
        let answer = try response.object()
        #expect(answer["camera"] as? String == "0")
        let photos = try #require(answer["photos"] as? [[String: Any]])
        #expect(photos.compactMap { $0["file"] as? String } == ["shot-001.jpg", "shot-002.jpg", "shot-003.jpg"])
        #expect(service.files == ["shot-001.jpg", "shot-002.jpg", "shot-003.jpg"])
        var sequences: [Int] = []
        for photo in photos {
            let name = try #require(photo["file"] as? String)
            let size = try FileManager.default.attributesOfItem(atPath: service.file(name))[.size] as? Int
            #expect(photo["bytes"] as? Int == size)
            #expect(photo["width"] as? Int == 640 && photo["height"] as? Int == 480)
            #expect((photo["time"] as? String)?.hasSuffix("Z") == true)
            #expect(try Self.probedSize(service.file(name)) == "640x480")
            sequences.append(photo["sequence"] as? Int ?? -1)
        }
        #expect(sequences == sequences.sorted() && Set(sequences).count == 3, "each photo is a later frame")
        let events = service.events.filter { $0["event"] as? String == "photo" }
        #expect(events.compactMap { $0["path"] as? String } == ["shot-001.jpg", "shot-002.jpg", "shot-003.jpg"])
    }

    @Test func aPhotoWhileRecordingCostsTheRecordingNoFrame() throws {
        // The camera alone: a test tone late on a loaded machine loses samples
        // in real time whatever the photos do, while the test pattern loses a
        // frame only when a consumer holds back its buffers (what a stalling
        // photo would do).
        let service = try ServiceFixture(["--video", "test-pattern"])
        let started = try service.request("POST", "/recordings", json: #"{"file": "rec.mp4", "maxDuration": "3s"}"#)
        #expect(started.status == 201, "\(started.text)")
        usleep(800_000)
        let photo = try service.request("POST", "/photos", json: "{}")
        #expect(photo.status == 200)
        let burst = try service.request("POST", "/photos", json: #"{"count": 3, "file": "during-%n.png"}"#)
        #expect(burst.status == 201, "\(burst.text)")
        // Taken while it ran: the recording has not finished yet.
        #expect(!service.events.contains { $0["event"] as? String == "finished" })
        let finished = try #require(service.waitForEvent(timeout: 30) { $0["event"] as? String == "finished" && $0["recording"] as? String == "rec-1" })
        #expect(finished["dropped"] as? Int == 0, "\(finished)")
        #expect(finished["droppedFrames"] as? Int == 0, "\(finished)")
        #expect(finished["droppedByDevice"] as? Int == 0, "\(finished)")
        let frames = try #require(finished["frames"] as? Int)
        let counted = try runTool("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
                                              "-of", "csv=p=0", service.file("rec.mp4")])
        #expect(Int(counted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == frames)
        #expect(frames >= 85, "3 s at 30 fps")
        #expect(service.files == ["during-1.png", "during-2.png", "during-3.png", "rec.mp4"])
    }

    @Test func eachCameraHasItsOwnPhotos() throws {
        let service = try ServiceFixture(["--video", "test-pattern", "--video", "test-pattern,size=320x240"])
        let first = try service.request("POST", "/photos", json: #"{"camera": 0}"#)
        #expect(first.status == 200 && first.headers["x-photo-width"] == "640" && first.headers["x-camera"] == "0")
        let second = try service.request("POST", "/photos", json: #"{"camera": "1", "file": "second.png"}"#)
        #expect(second.status == 201, "\(second.text)")
        #expect(try Self.probedSize(service.file("second.png")) == "320x240")
        let event = service.waitForEvent(timeout: 5) { $0["event"] as? String == "photo" && $0["path"] as? String == "second.png" }
        #expect(event?["camera"] as? String == "1")
    }

    @Test func waitingTimeLapsesHoldNoOtherRequestBack() throws {
        let service = try ServiceFixture(["--video", "test-pattern"])
        // More waiting requests than the machine has cores.
        let lapses = try (1...6).map { try service.start("POST", "/photos", json: #"{"count": 2, "interval": "3s", "file": "lapse\#($0)-%n.jpg"}"#) }
        #expect(service.waitForEvent(timeout: 20) { $0["event"] as? String == "photo" } != nil)
        let single = try service.request("POST", "/photos", json: "{}")
        #expect(single.status == 200)
        #expect(try service.request("GET", "/session").status == 200)
        let taken = try #require(Double(single.headers["x-capture-timestamp"] ?? ""))
        for lapse in lapses {
            let answer = try lapse.response()
            #expect(answer.status == 201, "\(answer.text)")
            let photos = try #require(try answer.object()["photos"] as? [[String: Any]])
            let stamps = photos.compactMap { $0["timestamp"] as? Double }
            #expect(stamps.count == 2)
            // Media times: the photo asked for meanwhile was taken before any time-lapse's second one.
            #expect(taken < stamps[1])
            #expect(stamps[1] - stamps[0] >= 2.99)
        }
    }

    @Test func badSettingsAreRefusedAndWriteNothing() throws {
        let service = try ServiceFixture()
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
        ]
        for (body, fragment) in cases {
            let response = try service.request("POST", "/photos", json: body)
            #expect(response.status == 400, "\(body): \(response.status) \(response.text)")
            let message = try response.object()["error"] as? String ?? ""
            #expect(message.contains(fragment), "\(body): \(message)")
            #expect(!message.contains("\n"))
        }
        #expect(service.files.isEmpty)
        #expect(!service.events.contains { $0["event"] as? String == "photo" })
    }

    @Test func anExistingFileIsNeverOverwritten() throws {
        let service = try ServiceFixture()
        try Data("mine".utf8).write(to: URL(fileURLWithPath: service.file("taken.jpg")))
        try Data("mine".utf8).write(to: URL(fileURLWithPath: service.file("b-2.jpg")))
        let one = try service.request("POST", "/photos", json: #"{"file": "taken.jpg"}"#)
        #expect(one.status == 409, "\(one.text)")
        #expect((try one.object()["error"] as? String)?.contains("taken.jpg") == true)
        // The second photo of a burst exists: the first is not taken either.
        let burst = try service.request("POST", "/photos", json: #"{"count": 3, "file": "b-%n.jpg"}"#)
        #expect(burst.status == 409, "\(burst.text)")
        #expect(service.files == ["b-2.jpg", "taken.jpg"])
        #expect(try String(contentsOfFile: service.file("taken.jpg"), encoding: .utf8) == "mine")
    }

    // MARK: Controls and torch

    @Test func aVirtualCameraHasNoControls() throws {
        let service = try ServiceFixture()
        let response = try service.request("GET", "/devices/0/controls")
        #expect(response.status == 200)
        let document = try response.object()
        let command = try CapctlRun.run(["controls", "test-pattern", "--json"])
        #expect(command.status == 0)
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(command.stdout.utf8)) as? [String: Any])
        #expect(NSDictionary(dictionary: document).isEqual(to: expected), "\(response.text) vs \(command.stdout)")
        #expect((document["classes"] as? [Any])?.isEmpty == true)

        let patch = try service.request("PATCH", "/devices/0/controls", json: #"{"brightness": 10}"#)
        #expect(patch.status == 400)
        #expect((try patch.object()["error"] as? String)?.contains("virtual camera") == true)

        #expect(try service.request("GET", "/devices/1/controls").status == 400, "a microphone has no camera controls")
        #expect(try service.request("GET", "/devices/5/controls").status == 404)
        #expect(try service.request("PATCH", "/devices/5/controls", json: #"{"brightness": 10}"#).status == 404)
    }

    @Test func aVirtualCameraHasNoTorch() throws {
        let service = try ServiceFixture()
        for body in [#"{"on": true}"#, #"{"level": 0.5}"#, #"{"on": false}"#] {
            let response = try service.request("POST", "/devices/0/torch", json: body)
            #expect(response.status == 400, "\(body): \(response.text)")
            #expect((try response.object()["error"] as? String)?.contains("no torch") == true)
        }
        for body in [#"{"level": 2}"#, #"{"level": 0}"#, #"{"on": false, "level": 0.5}"#, #"{"on": "yes"}"#, #"{"bright": 1}"#] {
            #expect(try service.request("POST", "/devices/0/torch", json: body).status == 400, "\(body)")
        }
    }
}
