import Foundation
import Glibc
import Testing

/// `capctl serve` as a process, through real HTTP (curl) on 127.0.0.1: the
/// event stream beside its stdout, the ends a signal makes, and clients that
/// leave mid-request. (Recordings through the routes are tested in this
/// process: CapctlServiceTests/RecordingRouteTests.)
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

    @Test func theEventStreamCarriesEveryEventWithItsRecording() throws {
        let service = try ServiceFixture()
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        // (--max-time: a bound on a hang; the test ends the stream once its recording has finished.)
        curl.arguments = ["-s", "-N", "--max-time", "60", service.url + "/events"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        defer { if curl.isRunning { kill(curl.processIdentifier, SIGKILL) } }
        // The stream's first comment: from here on it carries every event.
        var text = ""
        while !text.contains(": capctl events\n\n") {
            let chunk = out.fileHandleForReading.availableData
            try #require(!chunk.isEmpty, "the event stream ended before it opened: \(text)")
            text += String(decoding: chunk, as: UTF8.self)
        }
        let id = try #require(try service.request("POST", "/recordings", json: #"{"file": "e.mp4", "maxDuration": "2s"}"#).json["id"] as? String)
        // Read until the recording's finished event has come whole.
        func hasFinished(_ text: String) -> Bool {
            guard let range = text.range(of: "event: finished\n") else { return false }
            return text[range.upperBound...].contains("\n\n")
        }
        while !hasFinished(text) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        // (SIGKILL: Foundation's terminate() left curl running here until its --max-time.)
        kill(curl.processIdentifier, SIGKILL)
        curl.waitUntilExit()
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
        let printed = try #require(service.waitForEvent("finished", recording: id))
        #expect(finished["frames"] as? Int == printed["frames"] as? Int)
        #expect(NSDictionary(dictionary: finished).isEqual(to: printed), "\(finished) vs \(printed)")
        #expect(service.stop() == 0)
    }

    @Test func sigtermFinishesEveryRecording() throws {
        let service = try ServiceFixture()
        let a = try #require(try service.request("POST", "/recordings", json: #"{"file": "t1.mp4"}"#).json["id"] as? String)
        let b = try #require(try service.request("POST", "/recordings", json: #"{"file": "t2.mov", "startPaused": true}"#).json["id"] as? String)
        #expect(try service.request("POST", "/recordings/\(b)/resume").status == 200)
        // Both have recorded for a while (a second of frames each) when the signal comes.
        for id in [a, b] {
            #expect(service.waitForEvent(timeout: 30) {
                $0["event"] as? String == "progress" && $0["recording"] as? String == id && ($0["frames"] as? Int ?? 0) >= 30
            } != nil, "no progress of \(id)")
        }
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
        let id = try #require(try service.request("POST", "/recordings", json: #"{"file": "k.mp4"}"#).json["id"] as? String)
        // Some fragments (a second each) written: 3 s of frames reported.
        let progress = service.waitForEvent(timeout: 60) {
            $0["event"] as? String == "progress" && $0["recording"] as? String == id && ($0["frames"] as? Int ?? 0) >= 90
        }
        try #require(progress != nil, "no progress to 90 frames")
        let reported = service.events("progress", recording: id).last?["frames"] as? Int ?? 0
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
