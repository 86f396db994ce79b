import Foundation
import Glibc
import Testing

/// `capctl serve` through real HTTP (curl) on 127.0.0.1: recordings started,
/// paused, switched and stopped while the session runs, several at once,
/// the event stream, and the ends a signal makes.
@Suite(.serialized) struct ServiceRecordingTests {
    /// The recording's files, as its finished event names them, each holding the frames its segment event reported.
    private func checkFiles(_ service: ServiceFixture, recording: String) throws -> (finished: [String: Any], frames: Int) {
        let finished = try #require(service.waitForEvent("finished", recording: recording, seconds: 30), "no finished event for \(recording)")
        let files = try #require(finished["files"] as? [String])
        #expect(!files.isEmpty)
        var total = 0
        for file in files {
            let segment = try #require(service.events("segment", recording: recording).first { $0["file"] as? String == file },
                                       "no segment event for \(file)")
            let frames = try decodedFrames(service.file(file))
            #expect(frames == segment["frames"] as? Int, "\(file): \(frames) frames in the file, \(segment["frames"] ?? "none") reported")
            total += frames
        }
        #expect(total == finished["frames"] as? Int)
        // Losses only where reported (a busy machine drops frames, and says so): the frames in
        // the files and those reported dropped add up to what the 30 fps test pattern sent
        // over the recorded time, a frame either way at each file's ends.
        let duration = try #require(finished["duration"] as? Double)
        let dropped = try #require(finished["droppedFrames"] as? Int)
        let sent = Int((duration * 30).rounded())
        #expect(abs(total + dropped - sent) <= 2 * files.count + 1,
                "\(total) frames + \(dropped) dropped, \(sent) sent in \(duration) s")
        return (finished, total)
    }

    @Test func aRecordingIsPausedSwitchedAndStoppedOverHTTP() throws {
        let service = try ServiceFixture()
        let created = try service.request("POST", "/recordings", json: #"{"file": "door-%2n.mp4", "videoCodec": "h264", "metadata": {"title": "Door"}}"#)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json["id"] as? String)
        #expect(created.json["file"] as? String == "door-01.mp4")
        #expect(service.waitForEvent("started", recording: id) != nil)
        usleep(1_200_000)

        let paused = try service.request("POST", "/recordings/\(id)/pause")
        #expect(paused.status == 200)
        #expect(service.waitForEvent("paused", recording: id) != nil)
        #expect(try service.request("GET", "/recordings/\(id)").json["state"] as? String == "paused")
        usleep(800_000)
        #expect(try service.request("POST", "/recordings/\(id)/resume").status == 200)
        #expect(service.waitForEvent("resumed", recording: id) != nil)
        usleep(1_000_000)
        #expect(try service.request("POST", "/recordings/\(id)/switch").status == 200)
        #expect(service.waitForEvent("segment", recording: id) != nil)
        usleep(1_000_000)

        let status = try service.request("GET", "/recordings/\(id)").json
        #expect(status["state"] as? String == "running")
        let progress = try #require(status["progress"] as? [String: Any])
        #expect((progress["frames"] as? Int ?? 0) > 60)

        let stopped = try service.request("POST", "/recordings/\(id)/stop")
        #expect(stopped.status == 200)
        #expect(stopped.json["state"] as? String == "finished")
        let (finished, _) = try checkFiles(service, recording: id)
        #expect(finished["files"] as? [String] == ["door-01.mp4", "door-02.mp4"])
        #expect(finished["reason"] as? String == "stopped")
        // The pause is left out: about 3.2 s of the 4 s the recording ran.
        let duration = try #require(finished["duration"] as? Double)
        #expect(duration > 2.6 && duration < 3.9, "duration \(duration)")
        // A finished recording takes no more requests.
        #expect(try service.request("POST", "/recordings/\(id)/pause").status == 409)
        #expect(try service.request("GET", "/recordings/nothing").status == 404)
        #expect(service.stop() == 0)
    }

    @Test func twoRecordingsWithOtherSettingsRunAtOnce() throws {
        let service = try ServiceFixture()
        let first = try service.request("POST", "/recordings", json: #"{"file": "a.mp4"}"#).json
        let second = try service.request("POST", "/recordings", json: #"{"file": "b.mkv", "videoCodec": "mjpeg", "maxDuration": "2s"}"#).json
        let a = try #require(first["id"] as? String), b = try #require(second["id"] as? String)
        #expect(a != b)
        // The second ends at its limit while the first goes on.
        let ended = try #require(service.waitForEvent("finished", recording: b, seconds: 15))
        #expect(ended["reason"] as? String == "max-duration")
        #expect(try service.request("GET", "/recordings/\(a)").json["state"] as? String == "running")
        let list = try service.request("GET", "/recordings").json["recordings"] as? [[String: Any]]
        #expect(list?.count == 2)
        usleep(500_000)
        #expect(try service.request("POST", "/recordings/\(a)/stop").status == 200)
        let (finishedA, _) = try checkFiles(service, recording: a)
        let (finishedB, _) = try checkFiles(service, recording: b)
        // (The frames in each, with those reported dropped, are what 30 fps sent: checkFiles.)
        #expect(finishedB["duration"] as? Double == 2)
        #expect((finishedA["duration"] as? Double ?? 0) > 2)
        #expect(finishedA["reason"] as? String == "stopped")
        let codec = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                            service.file("b.mkv")]).stdout
        #expect(codec.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg")
        #expect(service.stop() == 0)
    }

    @Test func markersBecomeChaptersReadBackByFFprobeAndMKVToolNix() throws {
        let service = try ServiceFixture()
        let mp4 = try #require(try service.request("POST", "/recordings", json: #"{"file": "m.mp4"}"#).json["id"] as? String)
        let mkv = try #require(try service.request("POST", "/recordings", json: #"{"file": "m.mkv"}"#).json["id"] as? String)
        usleep(1_000_000)
        var placed: [String: [(title: String, time: Double)]] = [:]
        for (index, title) in ["door opened", "door closed"].enumerated() {
            for id in [mp4, mkv] {
                let reply = try service.request("POST", "/recordings/\(id)/markers", json: #"{"title": "\#(title)"}"#)
                #expect(reply.status == 201, "\(reply.text)")
                #expect(reply.json["title"] as? String == title)
                placed[id, default: []].append((title, try #require(reply.json["fileTime"] as? Double)))
            }
            if index == 0 { usleep(1_200_000) }
        }
        #expect(try service.request("POST", "/recordings/\(mp4)/markers", json: #"{"title": ""}"#).status == 400)
        #expect(try service.request("POST", "/recordings/\(mp4)/markers", json: #"{"name": "x"}"#).status == 400)
        usleep(500_000)
        for id in [mp4, mkv] { #expect(try service.request("POST", "/recordings/\(id)/stop").status == 200) }
        #expect(try service.request("POST", "/recordings/\(mp4)/markers", json: #"{"title": "late"}"#).status == 409)
        let listed = try service.request("GET", "/recordings/\(mp4)").json["markers"] as? [[String: Any]]
        #expect(listed?.map { $0["title"] as? String } == ["door opened", "door closed"])
        #expect(service.events("marker", recording: mkv).count == 2)

        for (id, name) in [(mp4, "m.mp4"), (mkv, "m.mkv")] {
            let path = service.file(name)
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
        // MKVToolNix's own reading of the chapters.
        let chaptersXML = try runTool("mkvextract", [service.file("m.mkv"), "chapters", "-"]).stdout
        #expect(chaptersXML.contains("<ChapterString>door opened</ChapterString>")
            && chaptersXML.contains("<ChapterString>door closed</ChapterString>"), "\(chaptersXML)")
        let info = try CapctlRun.run(["info", "--json", service.file("m.mp4")])
        let infoChapters = jsonObject(info.stdout)?["chapters"] as? [[String: Any]]
        #expect(infoChapters?.compactMap { $0["title"] as? String } == ["door opened", "door closed"])
        #expect(service.stop() == 0)
    }

    @Test func badSettingsAreRefusedAndChangeNothing() throws {
        let service = try ServiceFixture()
        let cases = [
            #"{"file": "x.mp4", "maxDuration": "soon"}"#,
            #"{"file": "x.mp4", "segmentDuration": "1s"}"#,
            #"{"file": "x.unknown"}"#,
            #"{"file": "x.mp4", "noSuchOption": 1}"#,
            #"{"file": "x.mp4", "size": "320x240"}"#,
            #"{"file": "x.mp4", "overwrite": true}"#,
            #"{"file": 5}"#,
            #"["x.mp4"]"#,
            "not json",
            "{}",
        ]
        for body in cases {
            let reply = try service.request("POST", "/recordings", json: body)
            #expect(reply.status == 400, "\(body) → \(reply.status) \(reply.text)")
            let message = try #require(reply.json["error"] as? String, "\(body): \(reply.text)")
            #expect(!message.isEmpty && !message.contains("\n"))
        }
        #expect(service.files.isEmpty)
        #expect(try service.request("GET", "/recordings").json["recordings"] as? [Any] == nil
            || (try service.request("GET", "/recordings").json["recordings"] as? [Any])?.isEmpty == true)
        #expect(service.stop() == 0)
    }

    @Test func theEventStreamCarriesEveryEventWithItsRecording() throws {
        let service = try ServiceFixture()
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "-N", "--max-time", "6", service.url + "/events"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        usleep(300_000)
        let id = try #require(try service.request("POST", "/recordings", json: #"{"file": "e.mp4", "maxDuration": "2s"}"#).json["id"] as? String)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let events = text.components(separatedBy: "\n\n").compactMap { block -> (name: String, data: [String: Any])? in
            let lines = block.split(separator: "\n")
            guard let name = lines.first(where: { $0.hasPrefix("event: ") })?.dropFirst(7),
                  let data = lines.first(where: { $0.hasPrefix("data: ") })?.dropFirst(6),
                  let object = jsonObject(String(data)) else { return nil }
            return (String(name), object)
        }
        let names = events.filter { $0.data["recording"] as? String == id }.map(\.name)
        #expect(names.first == "started")
        #expect(names.contains("progress"))
        #expect(names.contains("segment"))
        #expect(names.last == "finished")
        // Each SSE event is the line stdout carries.
        let finished = try #require(events.first { $0.name == "finished" }?.data)
        #expect(finished["frames"] as? Int == service.events("finished", recording: id).first?["frames"] as? Int)
        #expect(service.stop() == 0)
    }

    @Test func sigtermFinishesEveryRecording() throws {
        let service = try ServiceFixture()
        let a = try #require(try service.request("POST", "/recordings", json: #"{"file": "t1.mp4"}"#).json["id"] as? String)
        let b = try #require(try service.request("POST", "/recordings", json: #"{"file": "t2.mov", "startPaused": true}"#).json["id"] as? String)
        #expect(try service.request("POST", "/recordings/\(b)/resume").status == 200)
        usleep(1_500_000)
        #expect(service.stop(signal: SIGTERM) == 0)
        for id in [a, b] {
            let (finished, frames) = try checkFiles(service, recording: id)
            #expect(finished["reason"] as? String == "stopped")
            #expect(frames > 0)
        }
        #expect(service.events("service-stopped").count == 1)
    }

    @Test func aKilledServiceLeavesAFileRepairAsAfterRecord() throws {
        let service = try ServiceFixture()
        _ = try #require(try service.request("POST", "/recordings", json: #"{"file": "k.mp4"}"#).json["id"] as? String)
        usleep(3_500_000)
        let reported = service.events("progress").last?["frames"] as? Int ?? 0
        #expect(service.stop(signal: SIGKILL) == 128 + SIGKILL)
        let path = service.file("k.mp4")
        let repair = try CapctlRun.run(["repair", "--json", path])
        #expect(repair.status == 0, "\(repair.stderr)")
        let frames = try decodedFrames(path)
        // Fragments are a second long: all but about the last second is kept.
        #expect(frames >= reported - 45 && frames > 30, "\(frames) frames kept, \(reported) reported before the kill")
    }

    @Test func clientsThatLeaveMidRequestOrMidStreamHarmNothing() throws {
        let service = try ServiceFixture()
        let id = try #require(try service.request("POST", "/recordings", json: #"{"file": "c.mp4", "maxDuration": "4s"}"#).json["id"] as? String)
        for _ in 0..<5 {
            // Half a request, then gone.
            let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(service.port).bigEndian)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(connected == 0)
            let partial = "POST /recordings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"file\":"
            _ = partial.withCString { send(socket, $0, strlen($0), 0) }
            close(socket)
            // An event stream read for a moment, then dropped.
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = ["-s", "-N", "--max-time", "0.5", service.url + "/events"]
            curl.standardOutput = FileHandle.nullDevice
            try curl.run()
            curl.waitUntilExit()
        }
        #expect(try service.request("GET", "/session").status == 200)
        let (finished, frames) = try checkFiles(service, recording: id)
        // All 4 s recorded (what of it a busy machine dropped is reported: checkFiles).
        #expect(finished["duration"] as? Double == 4)
        #expect(frames > 0)
        #expect(service.isRunning)
        #expect(service.stop() == 0)
    }
}
