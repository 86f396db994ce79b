import CapctlService
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Recordings through the service's routes in this process, over the real
/// `CaptureService` on the test pattern and tone: paused, switched and
/// stopped, several at once, with markers, refused, and stopped early; what
/// their files hold is what their events reported. Each waits for the event
/// or the progress that matters, never for a time.
@Suite(.serialized) struct RecordingRouteTests {
    @Test func aRecordingIsPausedSwitchedAndStopped() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let capturedBefore = try await client.capturedFrames()
            let created = try await client.send(.post, "/recordings", json: #"{"file": "door-%2n.mp4", "videoCodec": "h264", "metadata": {"title": "Door"}}"#)
            #expect(created.status == .created, "\(created.error)")
            let id = try #require(try created.object["id"] as? String)
            #expect(try created.object["file"] as? String == "door-01.mp4")
            #expect(await log.wait("started", recording: id) != nil)
            #expect(try await client.waitForFrames(36, recording: id) != nil, "no frames recorded")

            let paused = try await client.send(.post, "/recordings/\(id)/pause")
            #expect(paused.status == .ok, "\(paused.error)")
            let pausedEvent = try #require(await log.wait("paused", recording: id))
            #expect(try await client.send(.get, "/recordings/\(id)").object["state"] as? String == "paused")
            // While paused the camera goes on: 45 of its frames (1.5 s of them) pass unrecorded.
            let capturedAtPause = try await client.capturedFrames()
            #expect(try await client.poll("/devices", seconds: 60) { (($0["devices"] as? [[String: Any]])?.first?["framesCaptured"] as? Int ?? 0) >= capturedAtPause + 45 } != nil)

            #expect(try await client.send(.post, "/recordings/\(id)/resume").status == .ok)
            let resumed = try #require(await log.wait("resumed", recording: id))
            // The recording's media time stood still through the pause (a few frames either way).
            let pausedAt = try #require(pausedEvent["duration"] as? Double), resumedAt = try #require(resumed["duration"] as? Double)
            #expect(abs(resumedAt - pausedAt) <= 0.2, "paused at \(pausedAt) s, resumed at \(resumedAt) s")
            let framesAtResume = recordedFrames(try await client.send(.get, "/recordings/\(id)").object)
            #expect(try await client.waitForFrames(framesAtResume + 30, recording: id) != nil)

            #expect(try await client.send(.post, "/recordings/\(id)/switch").status == .ok)
            let firstSegment = try #require(await log.wait("segment", recording: id))
            #expect(firstSegment["file"] as? String == "door-01.mp4")
            let framesAtSwitch = recordedFrames(try await client.send(.get, "/recordings/\(id)").object)
            let status = try #require(try await client.waitForFrames(framesAtSwitch + 30, recording: id))
            #expect(status["state"] as? String == "running")
            #expect(recordedFrames(status) > 60)

            let stopped = try await client.send(.post, "/recordings/\(id)/stop")
            #expect(stopped.status == .ok)
            #expect(try stopped.object["state"] as? String == "finished")
            let capturedAfter = try await client.capturedFrames()
            let (finished, frames) = try await checkFiles(log, folder: setup.folder, recording: id)
            #expect(finished["files"] as? [String] == ["door-01.mp4", "door-02.mp4"])
            #expect(finished["reason"] as? String == "stopped")
            // The pause is left out: the files hold fewer frames than the camera captured
            // from the request to the stop, by the 45 captured while paused (a few either way
            // for frames in flight at the request, the pause and the stop).
            #expect(frames <= capturedAfter - capturedBefore - 40, "\(frames) recorded of \(capturedAfter - capturedBefore) captured")
            // A finished recording takes no more requests.
            #expect(try await client.send(.post, "/recordings/\(id)/pause").status == .conflict)
            #expect(try await client.send(.get, "/recordings/nothing").status == .notFound)
        }
    }

    @Test func twoRecordingsWithOtherSettingsRunAtOnce() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let first = try await client.send(.post, "/recordings", json: #"{"file": "a.mp4"}"#).object
            let second = try await client.send(.post, "/recordings", json: #"{"file": "b.mkv", "videoCodec": "mjpeg", "maxDuration": "2s"}"#).object
            let a = try #require(first["id"] as? String), b = try #require(second["id"] as? String)
            #expect(a != b)
            // The second ends at its limit while the first goes on.
            let ended = try #require(await log.wait("finished", recording: b))
            #expect(ended["reason"] as? String == "max-duration")
            #expect(try await client.send(.get, "/recordings/\(a)").object["state"] as? String == "running")
            let list = try await client.send(.get, "/recordings").object["recordings"] as? [[String: Any]]
            #expect(list?.count == 2)
            // The first goes past the second's 2 s before it is stopped.
            #expect(try await client.poll("/recordings/\(a)") { (($0["progress"] as? [String: Any])?["duration"] as? Double ?? 0) > 2.2 } != nil)
            #expect(try await client.send(.post, "/recordings/\(a)/stop").status == .ok)
            let (finishedA, _) = try await checkFiles(log, folder: setup.folder, recording: a)
            let (finishedB, _) = try await checkFiles(log, folder: setup.folder, recording: b)
            // (The frames in each, with those reported dropped, are what 30 fps sent: checkFiles.)
            #expect(finishedB["duration"] as? Double == 2)
            #expect((finishedA["duration"] as? Double ?? 0) > 2)
            #expect(finishedA["reason"] as? String == "stopped")
            let codec = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                                setup.folder + "/b.mkv"]).stdout
            #expect(codec.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg")
        }
    }

    @Test func markersBecomeChaptersReadBackByFFprobeAndMKVToolNix() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let mp4 = try #require(try await client.send(.post, "/recordings", json: #"{"file": "m.mp4"}"#).object["id"] as? String)
            let mkv = try #require(try await client.send(.post, "/recordings", json: #"{"file": "m.mkv"}"#).object["id"] as? String)
            var placed: [String: [(title: String, time: Double)]] = [:]
            // Each marker some frames (a second) after the last, and the stop some after the last marker.
            var frames = 0
            for title in ["door opened", "door closed"] {
                frames += 30
                for id in [mp4, mkv] { #expect(try await client.waitForFrames(frames, recording: id) != nil) }
                for id in [mp4, mkv] {
                    let reply = try await client.send(.post, "/recordings/\(id)/markers", json: #"{"title": "\#(title)"}"#)
                    #expect(reply.status == .created, "\(reply.error)")
                    #expect(try reply.object["title"] as? String == title)
                    placed[id, default: []].append((title, try #require(try reply.object["fileTime"] as? Double)))
                }
                frames = recordedFrames(try await client.send(.get, "/recordings/\(mp4)").object)
            }
            #expect(try await client.send(.post, "/recordings/\(mp4)/markers", json: #"{"title": ""}"#).status == .badRequest)
            #expect(try await client.send(.post, "/recordings/\(mp4)/markers", json: #"{"name": "x"}"#).status == .badRequest)
            for id in [mp4, mkv] { #expect(try await client.waitForFrames(frames + 15, recording: id) != nil) }
            for id in [mp4, mkv] { #expect(try await client.send(.post, "/recordings/\(id)/stop").status == .ok) }
            #expect(try await client.send(.post, "/recordings/\(mp4)/markers", json: #"{"title": "late"}"#).status == .conflict)
            let listed = try await client.send(.get, "/recordings/\(mp4)").object["markers"] as? [[String: Any]]
            #expect(listed?.map { $0["title"] as? String } == ["door opened", "door closed"])
            #expect(await log.wait("finished", recording: mkv) != nil)
            #expect(log.events("marker", recording: mkv).count == 2)

            for (id, name) in [(mp4, "m.mp4"), (mkv, "m.mkv")] {
                let path = setup.folder + "/" + name
                let probe = try runTool("ffprobe", ["-v", "error", "-show_chapters", "-of", "json", path]).stdout
                let chapters = try #require((jsonObject(probe)?["chapters"] as? [[String: Any]]), "\(probe)")
                let expected = try #require(placed[id])
                #expect(chapters.count == expected.count, "\(name): \(probe)")
                for (chapter, marker) in zip(chapters, expected) {
                    #expect((chapter["tags"] as? [String: Any])?["title"] as? String == marker.title)
                    let start = Double(chapter["start_time"] as? String ?? "") ?? -1
                    // Within a frame interval of where the service said it put the marker.
                    #expect(abs(start - marker.time) <= 0.034, "\(name): chapter at \(start), marker at \(marker.time)")
                }
            }
            // MKVToolNix's own reading of the chapters, and capctl info's.
            let chaptersXML = try runTool("mkvextract", [setup.folder + "/m.mkv", "chapters", "-"]).stdout
            #expect(chaptersXML.contains("<ChapterString>door opened</ChapterString>")
                && chaptersXML.contains("<ChapterString>door closed</ChapterString>"), "\(chaptersXML)")
            let info = try capctl(["info", "--json", setup.folder + "/m.mp4"])
            let infoChapters = jsonObject(info.stdout)?["chapters"] as? [[String: Any]]
            #expect(infoChapters?.compactMap { $0["title"] as? String } == ["door opened", "door closed"])
        }
    }

    @Test func badSettingsAreRefusedAndChangeNothing() async throws {
        let setup = try InProcessService()
        defer { setup.remove() }
        try await setup.test { client, _ in
            let cases = [
                #"{"file": "x.mp4", "maxDuration": "soon"}"#,
                #"{"file": "x.mp4", "segmentDuration": "1s"}"#,
                #"{"file": "x.unknown"}"#,
                #"{"file": "x.mp4", "noSuchOption": 1}"#,
                #"{"file": "x-%87362474055655127n.mp4", "segmentDuration": "1s"}"#,
                #"{"file": "x-%200n%200n.mp4", "segmentDuration": "1s"}"#,
                #"{"file": "x.mp4", "size": "320x240"}"#,
                #"{"file": "x.mp4", "overwrite": true}"#,
                #"{"file": 5}"#,
                #"["x.mp4"]"#,
                "not json",
                "{}",
            ]
            for body in cases {
                let reply = try await client.send(.post, "/recordings", json: body)
                #expect(reply.status == .badRequest, "\(body) → \(reply.status) \(reply.error)")
                let message = try #require(try reply.object["error"] as? String, "\(body): \(String(buffer: reply.body))")
                #expect(!message.isEmpty && !message.contains("\n"))
            }
            #expect(files(in: setup.folder).isEmpty)
            #expect((try await client.send(.get, "/recordings").object["recordings"] as? [Any])?.isEmpty == true)
        }
    }

    /// A recording stopped before any media reached its file ends as
    /// `stopped`, not as an error: no file, `files` empty, and the folder holds nothing.
    @Test func aStopBeforeTheFirstFrameLeavesNoFile() async throws {
        // A camera that sends a frame every 10 s: a stop at once after the
        // start comes before its next frame (mostly before any frame at all;
        // the test holds either way).
        let setup = try InProcessService(["--video", "test-pattern,fps=0.1"])
        defer { setup.remove() }
        try await setup.test { client, service in
            let log = EventLog(service.events)
            let created = try await client.send(.post, "/recordings", json: #"{"file": "early.mp4"}"#)
            #expect(created.status == .created, "\(created.error)")
            let id = try #require(try created.object["id"] as? String)
            let stopped = try await client.send(.post, "/recordings/\(id)/stop")
            #expect(stopped.status == .ok, "\(stopped.error)")
            let finished = try #require(await log.wait("finished", recording: id))
            #expect(finished["reason"] as? String == "stopped", "\(finished)")
            #expect(finished["exitStatus"] as? Int == 0, "\(finished)")
            #expect(finished["error"] == nil, "\(finished)")
            let named = try #require(finished["files"] as? [String])
            // Every file it names is there; with no frame, there is none.
            for file in named { #expect(FileManager.default.fileExists(atPath: setup.folder + "/" + file), "\(file) is named and missing") }
            if finished["frames"] as? Int == 0 {
                #expect(named.isEmpty, "\(finished)")
                #expect(files(in: setup.folder).isEmpty)
                #expect(log.events("segment", recording: id).isEmpty)
            }
            let listed = try await client.send(.get, "/recordings/\(id)").object
            #expect(listed["state"] as? String == "finished")
            let listedFiles = try #require(listed["files"] as? [String])
            for file in listedFiles { #expect(FileManager.default.fileExists(atPath: setup.folder + "/" + file), "GET lists \(file), which is not there") }
        }
    }

    /// The service's overlay is its cameras': started with --overlay, every view
    /// of the camera shows it, and a recording cannot ask for its own.
    @Test func overlayIsTheCamerasAndRefusedPerRecording() async throws {
        let setup = try InProcessService(["--video", "test-pattern,size=640x480", "--overlay", "%H:%M:%S"])
        defer { setup.remove() }
        try await setup.test { client, _ in
            for body in [#"{"file": "x.mp4", "overlay": "%T"}"#, #"{"file": "x.mp4", "overlayPosition": "top-right"}"#] {
                let reply = try await client.send(.post, "/recordings", json: body)
                #expect(reply.status == .badRequest, "\(body) → \(reply.status) \(reply.error)")
                #expect(reply.error.contains("start the service with --overlay TEXT"), "\(reply.error)")
            }
            #expect(files(in: setup.folder).isEmpty)
            // The live view's picture has the dark box where the test pattern is white (its left edge).
            let snapshot = try await client.send(.get, "/snapshot.jpg")
            #expect(snapshot.status == .ok)
            let jpeg = setup.folder + "-overlay-snapshot.jpg"
            try snapshot.data.write(to: URL(fileURLWithPath: jpeg))
            defer { try? FileManager.default.removeItem(atPath: jpeg) }
            let gray = try toolData("ffmpeg", ["-v", "error", "-nostdin", "-i", jpeg, "-vf", "scale=640:480,format=gray", "-f", "rawvideo", "-"])
            #expect(gray.status == 0)
            let pixels = [UInt8](gray.stdout)
            try #require(pixels.count >= 640 * 480, "\(pixels.count) bytes decoded")
            let inBox = Int(pixels[10 * 640 + 8]), belowBox = Int(pixels[100 * 640 + 8])
            #expect(inBox < 60 && belowBox > 190, "box \(inBox), pattern \(belowBox)")
        }
    }
}
