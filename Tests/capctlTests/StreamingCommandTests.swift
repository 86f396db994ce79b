import Foundation
import Glibc
import Testing

/// `capctl record --stream`: publishing to real servers on 127.0.0.1 (nginx
/// with the RTMP module, ffmpeg as SRT, RTSP and UDP receiver) while the
/// local file is recorded, and what happens when the server goes away,
/// never answers, or cannot be reached.
@Suite(.serialized) struct StreamingCommandTests {
    static let camera = ["--video", "test-pattern", "--size", "320x240", "--fps", "30", "--audio", "test-tone"]
    /// Frames in one GOP at the streams' default keyframe interval (2 s at 30 fps).
    static let gop = 60

    func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("capctl-stream-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    func lastEvent(_ result: CapctlRun) throws -> [String: Any] {
        let line = try #require(result.stdout.split(separator: "\n").last)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    func events(_ result: CapctlRun) -> [[String: Any]] {
        result.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    func stream(_ finished: [String: Any]) throws -> [String: Any] {
        try #require((finished["streams"] as? [[String: Any]])?.first)
    }

    /// Frames ffmpeg decodes from a file's first video (or audio) stream;
    /// MPEG-TS lists its streams twice (in its program and on their own).
    func receivedFrames(_ path: String, stream: String = "v:0") throws -> Int {
        let result = try runTool("ffprobe", ["-v", "error", "-count_frames", "-select_streams", stream, "-show_entries",
                                             "stream=nb_read_frames", "-of", "csv=p=0", path])
        return result.stdout.split(separator: "\n").lazy.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.first ?? 0
    }

    func duration(_ path: String) throws -> Double {
        let result = try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        return Double(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// The video frames of a local file are continuous: one every 1/30 s, no gap.
    /// What a recording (or a stream) of `expected` frames' time at 30 fps
    /// with the 48 kHz tone holds: every frame and sample but the few a busy
    /// machine made late (counted in `dropped`), never what the network
    /// held up: a stream that kept capture waiting, or the device's buffers,
    /// for a fifth of a second would lose more than the tenth allowed.
    func expectAccountedFor(frames: Int?, audioSamples: Int?, dropped: Int?, expected: Int,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        let frames = frames ?? -1, dropped = dropped ?? -1
        #expect(frames <= expected && frames >= expected - expected / 10, "\(frames) of \(expected) frames", sourceLocation: sourceLocation)
        #expect(frames + dropped >= expected, "\(expected - frames) frames missing, \(dropped) dropped", sourceLocation: sourceLocation)
        let samples = audioSamples ?? -1
        #expect(samples >= expected * 1600 * 9 / 10, "\(samples) audio samples in \(expected) frames' time", sourceLocation: sourceLocation)
    }

    func expectAccountedFor(_ finished: [String: Any], frames expected: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        expectAccountedFor(frames: finished["frames"] as? Int, audioSamples: finished["audioSamples"] as? Int, dropped: finished["dropped"] as? Int,
                           expected: expected, sourceLocation: sourceLocation)
    }

    /// The local file holds exactly the frames `finished` reports, one every
    /// 1/30 s but where a dropped frame left its slot empty.
    func expectContinuous(_ path: String, finished: [String: Any], frames expected: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        expectAccountedFor(finished, frames: expected, sourceLocation: sourceLocation)
        let times = try shownFrameTimes(path)
        #expect(times.count == finished["frames"] as? Int, sourceLocation: sourceLocation)
        let slots = zip(times.dropFirst(), times).map { ($0 - $1) * 30 }
        #expect(slots.allSatisfy { $0.rounded() >= 1 && abs($0 - $0.rounded()) < 0.06 }, "largest step \((slots.max() ?? 0) / 30)", sourceLocation: sourceLocation)
        let emptySlots = slots.reduce(0) { $0 + Int($1.rounded()) - 1 }
        #expect(emptySlots <= expected - (finished["frames"] as? Int ?? 0), "\(emptySlots) frames missing between others", sourceLocation: sourceLocation)
    }

    @Test func rtmpServerRecordsWhatTheFileHas() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try RTMPServer(directory: directory)
        try server.start()
        let local = directory.appendingPathComponent("local.mp4").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "4"] + Self.camera + ["--stream", server.url, local])
        #expect(result.status == 0, "\(result.stderr)")
        let finished = try lastEvent(result)
        #expect(finished["reason"] as? String == "max-duration")
        let sent = try stream(finished)
        #expect(sent["state"] as? String == "finished")
        #expect(sent["connections"] as? Int == 1)
        #expect(sent["droppedFrames"] as? Int == 0)
        #expect(sent["url"] as? String == "rtmp://127.0.0.1:\(server.port)/live/…", "the stream key is not printed")
        #expect(events(result).contains { $0["event"] as? String == "stream-connected" })
        server.stop(afterRecordingSettles: true)

        // What the server wrote decodes, and matches the local file within one GOP.
        let localFrames = try decodedFrames(local), serverFrames = try decodedFrames(server.recorded)
        expectAccountedFor(finished, frames: 120)
        #expect(localFrames == finished["frames"] as? Int)
        #expect(abs(serverFrames - localFrames) <= Self.gop, "server \(serverFrames), local \(localFrames)")
        #expect(serverFrames == sent["frames"] as? Int, "every frame sent was recorded by the server")
        #expect(abs(try duration(server.recorded) - (try duration(local))) <= 2.0)
        #expect(try decodedFrames(server.recorded, stream: "a:0") > 0, "the stream carries audio")
        #expect(try decodesCleanly(server.recorded))
    }

    @Test func srtListenerReceivesTheStream() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort(udp: true)
        let received = directory.appendingPathComponent("srt.ts").path
        // tlpktdrop=0: the listener waits for what it has not yet read instead of skipping it as
        // too late (SRT's live-mode default, which also lets the sender drop it): on a loaded
        // machine ffmpeg reads late, and 85 of 90 frames arrived in one full run. What is left to
        // compare is what capctl sent against what the stream carried.
        let receiver = try FFmpegReceiver(input: "srt://127.0.0.1:\(port)?mode=listener&tlpktdrop=0", output: received)
        #expect(waitForUDPSocket(port: port))
        let local = directory.appendingPathComponent("local.mkv").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "3"] + Self.camera + ["--stream", "srt://127.0.0.1:\(port)", local])
        #expect(result.status == 0, "\(result.stderr)")
        let sent = try stream(try lastEvent(result))
        #expect(receiver.waitForEnd())
        let frames = try receivedFrames(received)
        #expect(frames == sent["frames"] as? Int, "what was sent arrived (MPEG-TS over SRT)")
        #expect(abs(frames - (try decodedFrames(local))) <= Self.gop)
    }

    @Test func rtspServerReceivesTheStream() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort()
        let received = directory.appendingPathComponent("rtsp.mkv").path
        let receiver = try FFmpegReceiver(input: "rtsp://127.0.0.1:\(port)/live", inputOptions: ["-rtsp_flags", "listen"], output: received)
        #expect(waitForListener(port: port))
        // Stream only: no OUT.
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "3"] + Self.camera + ["--stream", "rtsp://127.0.0.1:\(port)/live"])
        #expect(result.status == 0, "\(result.stderr)")
        let finished = try lastEvent(result)
        #expect((finished["files"] as? [String])?.isEmpty == true)
        let sent = try stream(finished)
        expectAccountedFor(frames: sent["frames"] as? Int, audioSamples: sent["audioSamples"] as? Int, dropped: finished["dropped"] as? Int,
                           expected: 90)
        #expect(receiver.waitForEnd())
        #expect(try decodedFrames(received) == sent["frames"] as? Int)
        #expect(try decodedFrames(received, stream: "a:0") > 0)
    }

    @Test func udpCarriesMPEGTS() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort(udp: true)
        let received = directory.appendingPathComponent("udp.ts").path
        let receiver = try FFmpegReceiver(input: "udp://127.0.0.1:\(port)?timeout=3000000", output: received)
        #expect(waitForUDPSocket(port: port))
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "2"] + Self.camera + ["--stream", "udp://127.0.0.1:\(port)"])
        #expect(result.status == 0, "\(result.stderr)")
        let finished = try lastEvent(result)
        let sent = try stream(finished)
        receiver.waitForEnd()
        expectAccountedFor(frames: sent["frames"] as? Int, audioSamples: sent["audioSamples"] as? Int, dropped: finished["dropped"] as? Int,
                           expected: 60)
        // UDP may lose a datagram on a busy machine, and with it a frame.
        #expect(try receivedFrames(received) >= (sent["frames"] as? Int ?? 0) - 3)
    }

    @Test func audioAloneIsStreamed() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort(udp: true)
        let received = directory.appendingPathComponent("audio.ts").path
        let receiver = try FFmpegReceiver(input: "udp://127.0.0.1:\(port)?timeout=3000000", output: received)
        #expect(waitForUDPSocket(port: port))
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "2", "--audio", "test-tone", "--stream", "udp://127.0.0.1:\(port)"])
        #expect(result.status == 0, "\(result.stderr)")
        let sent = try stream(try lastEvent(result))
        #expect(sent["frames"] as? Int == 0)
        let samples = try #require(sent["audioSamples"] as? Int)
        #expect(abs(samples - 96000) <= 960, "2 s at 48 kHz, to a capture buffer")
        #expect(abs((sent["duration"] as? Double ?? 0) - 2) <= 0.03)
        receiver.waitForEnd()
        #expect(try receivedFrames(received, stream: "a:0") > 80, "about 94 AAC frames")
    }

    @Test func aWebMFileAndAStreamEachGetTheirCodec() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort(udp: true)
        let received = directory.appendingPathComponent("webm.ts").path
        let receiver = try FFmpegReceiver(input: "udp://127.0.0.1:\(port)?timeout=3000000", output: received)
        #expect(waitForUDPSocket(port: port))
        let local = directory.appendingPathComponent("local.webm").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "2", "--video", "test-pattern", "--size", "320x240",
                                        "--stream", "udp://127.0.0.1:\(port)", local])
        #expect(result.status == 0, "\(result.stderr)")
        // Two encoders (VP9 for the file, H.264 for the stream) on a busy machine may fall
        // behind and drop, and so may the test pattern: every frame the file was offered
        // is sent or counted as dropped by the stream.
        let finished = try lastEvent(result)
        let sent = try stream(finished)
        let frames = try #require(sent["frames"] as? Int), dropped = try #require(sent["droppedFrames"] as? Int)
        let offered = (finished["frames"] as? Int ?? 0) + (finished["droppedByQueue"] as? Int ?? 0) + (finished["droppedByWriter"] as? Int ?? 0)
        #expect(frames > 30 && abs(frames + dropped - offered) <= 2, "\(frames) sent, \(dropped) dropped; the file was offered \(offered)")
        receiver.waitForEnd()
        let codecs = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0", local])
        #expect(codecs.stdout.contains("vp9"), "the file keeps WebM's VP9")
        let streamed = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0", received])
        #expect(streamed.stdout.contains("h264"), "the stream gets H.264 of its own")
    }

    @Test func serverThatGoesAwayAndComesBack() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try RTMPServer(directory: directory)
        try server.start()
        let local = directory.appendingPathComponent("local.mp4").path
        let recorder = try RunningRecorder(Self.camera + ["--max-duration", "10", "--stream", server.url, local], in: directory)
        try recorder.waitFor { $0["event"] as? String == "stream-connected" }
        try recorder.waitFor { ($0["duration"] as? Double ?? 0) >= 2 }
        server.stop()
        let firstPart = directory.appendingPathComponent("first.flv")
        try recorder.waitFor { $0["event"] as? String == "stream-disconnected" }
        try recorder.waitFor { $0["event"] as? String == "stream-reconnecting" }
        try FileManager.default.moveItem(at: URL(fileURLWithPath: server.recorded), to: firstPart)
        try server.start()
        try recorder.waitFor { $0["event"] as? String == "stream-connected" && $0["connections"] as? Int == 2 }
        #expect(recorder.finish() == 0, "\(recorder.stderr)")
        let finished = try #require(recorder.events.last)
        #expect(finished["reason"] as? String == "max-duration")
        let sent = try stream(finished)
        // Two connections, or more on a machine so loaded that the server let a slow publisher go.
        let connections = try #require(sent["connections"] as? Int)
        #expect(connections >= 2)
        #expect((sent["droppedFrames"] as? Int ?? 0) > 0, "frames captured while the server was away are counted as dropped")
        server.stop()

        // The local file is continuous whatever the network did, and what it lacks is counted
        // (under a whole suite's load, 56 of 300 frames in one run, all reported).
        let recordedDropped = try #require(finished["dropped"] as? Int)
        if recordedDropped == 0 {
            try expectContinuous(local, finished: finished, frames: 300)
        } else {
            #expect((finished["frames"] as? Int ?? 0) + recordedDropped >= 300, "\(finished)")
            #expect(try decodedFrames(local) == finished["frames"] as? Int)
        }
        // Each connection's part decodes; together they are what was sent.
        let first = try decodedFrames(firstPart.path), second = try decodedFrames(server.recorded)
        #expect(first > 0 && second > 0)
        #expect(try decodesCleanly(server.recorded))
        // Sent means handed to the network: what the first connection's last
        // moments held in socket buffers went down with the server.
        let sentFrames = try #require(sent["frames"] as? Int)
        #expect(first + second <= sentFrames, "received \(first) + \(second) of \(sentFrames)")
        if connections == 2 {
            // (A third connection's recording replaces the second's on the server.)
            #expect(sentFrames - (first + second) <= 30, "received \(first) + \(second) of \(sentFrames)")
        }
        // Every frame of the 10 s is sent, counted as dropped by the stream, or dropped before it
        // and counted by the recording (the stream ends at --max-duration too).
        let streamed = sentFrames + (sent["droppedFrames"] as? Int ?? 0)
        #expect(streamed <= 301 && streamed + recordedDropped >= 299, "\(streamed) streamed or dropped by the stream, \(recordedDropped) dropped before it")
    }

    @Test func serverThatNeverAnswers() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let silent = try SilentServer()
        let local = directory.appendingPathComponent("local.mp4").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "3", "--stream-timeout", "1s"] + Self.camera
                                       + ["--stream", "rtmp://127.0.0.1:\(silent.port)/live/cam", local])
        #expect(result.status == 0, "\(result.stderr)")
        let all = events(result)
        let lost = all.filter { $0["event"] as? String == "stream-disconnected" }
        #expect(!lost.isEmpty)
        #expect((lost.first?["error"] as? String)?.contains("no answer for 1") == true, "\(lost.first ?? [:])")
        #expect(all.contains { $0["event"] as? String == "stream-reconnecting" })
        let finished = try lastEvent(result)
        #expect(try stream(finished)["connections"] as? Int == 0)
        try expectContinuous(local, finished: finished, frames: 90)
    }

    @Test func unreachableServerIsAnEvent() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort()
        let local = directory.appendingPathComponent("local.mp4").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "2"] + Self.camera + ["--stream", "rtmp://127.0.0.1:\(port)/live/x", local])
        #expect(result.status == 0, "\(result.stderr)")
        let lost = events(result).filter { $0["event"] as? String == "stream-disconnected" }
        #expect((lost.first?["error"] as? String)?.contains("Connection refused") == true)
        try expectContinuous(local, finished: try lastEvent(result), frames: 60)
    }

    /// A host name is looked up when the stream connects, not while the
    /// arguments are checked: one that does not resolve (the reserved
    /// .invalid domain) is a server that cannot be reached, reported in
    /// stream-disconnected events and retried, while the file is recorded.
    @Test func unresolvableHostIsAnEvent() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let local = directory.appendingPathComponent("local.mp4").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "2"] + Self.camera
                                       + ["--stream", "rtmp://no-such-host.invalid/live/x", local])
        #expect(result.status == 0, "\(result.stderr)")
        let lost = events(result).filter { $0["event"] as? String == "stream-disconnected" }
        #expect((lost.first?["error"] as? String)?.contains("the host 'no-such-host.invalid' is not known") == true, "\(lost)")
        #expect(lost.first?["url"] as? String == "rtmp://no-such-host.invalid/live/…")
        #expect(events(result).contains { $0["event"] as? String == "stream-reconnecting" })
        let finished = try lastEvent(result)
        #expect(try stream(finished)["connections"] as? Int == 0)
        try expectContinuous(local, finished: finished, frames: 60)
    }

    /// With --stream-required, an unresolvable host stops the recording
    /// (status 69) and what was recorded is a complete file.
    @Test func requiredStreamToAnUnresolvableHostStopsTheRecording() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let local = directory.appendingPathComponent("local.mp4").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "20", "--stream-required"] + Self.camera
                                       + ["--stream", "srt://no-such-host.invalid:9000", local])
        #expect(result.status == 69)
        let finished = try lastEvent(result)
        #expect(finished["reason"] as? String == "error")
        #expect((finished["error"] as? String)?.contains("the host 'no-such-host.invalid' is not known") == true)
        let frames = try #require(finished["frames"] as? Int)
        #expect(try decodedFrames(local) == frames)
    }

    @Test func requiredStreamThatFailsStopsTheRecording() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort()
        let local = directory.appendingPathComponent("local.mp4").path
        let result = try CapctlRun.run(["record", "--json", "--max-duration", "20", "--stream-required"] + Self.camera
                                       + ["--stream", "rtmp://127.0.0.1:\(port)/live/x", local])
        #expect(result.status == 69)
        let finished = try lastEvent(result)
        #expect(finished["reason"] as? String == "error")
        #expect((finished["error"] as? String)?.contains("--stream-required") == true)
        #expect(!events(result).contains { $0["event"] as? String == "stream-reconnecting" })
        // What was recorded until then is a complete file.
        let frames = try #require(finished["frames"] as? Int)
        #expect(frames < 600)
        #expect(try decodedFrames(local) == frames)
    }

    @Test(arguments: [
        ("http://127.0.0.1/live", "cannot publish to 'http://'"),
        ("rtmp:///live/x", "names no valid host"),
        ("rtmp://bad host/live", "names no valid host"),
        ("srt://127.0.0.1", "needs a port"),
        ("rtmp://127.0.0.1:99999/live", "needs a port"),
    ])
    func badURLsAreRefusedBeforeAnyFile(url: String, message: String) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let local = directory.appendingPathComponent("local.mp4").path
        let result = try CapctlRun.run(["record", "--max-duration", "1"] + Self.camera + ["--stream", url, local])
        #expect(result.status == 64)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: local))
    }

    @Test func streamOptionsNeedAStream() throws {
        let result = try CapctlRun.run(["record", "--video", "test-pattern", "--stream-required", "out.mp4"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--stream-required applies to streams; add --stream URL"))
        let none = try CapctlRun.run(["record", "--video", "test-pattern"])
        #expect(none.status == 64)
        #expect(none.stderr.contains("give OUT"))
        let fileOnly = try CapctlRun.run(["record", "--video", "test-pattern", "--segment-duration", "2", "--stream", "udp://127.0.0.1:5000"])
        #expect(fileOnly.stderr.contains("--segment-duration applies to a file; give OUT too"))
        let format = try CapctlRun.run(["record", "--video", "test-pattern", "--stream", "rtmp://127.0.0.1/live/x", "--stream-format", "rtsp"])
        #expect(format.status == 64)
        #expect(format.stderr.contains("the rtsp format needs an rtsp:// URL"))
    }
}
