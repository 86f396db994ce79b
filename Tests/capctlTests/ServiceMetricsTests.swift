import CapctlCommands
import CapctlService
@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// `GET /metrics` of a running `capctl serve` (test pattern and tone, real
/// HTTP through curl): the text is valid exposition, the inputs' counters
/// rise, a recording's and its streams' numbers are those of its events, and
/// a real Prometheus scrapes it with the service's token.
@Suite(.serialized) struct ServiceMetricsTests {
    /// The metrics now, read back (failing the test when the text is not valid exposition).
    private func scrape(_ service: ServiceFixture, headers: [String: String] = [:]) throws -> PrometheusText {
        let response = try service.request("GET", "/metrics", headers: headers)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.headers["content-type"] == PrometheusExposition.contentType)
        let parsed = try PrometheusText(response.text)
        // Every family has its HELP as well as its TYPE.
        #expect(Set(parsed.type.keys) == Set(parsed.help.keys))
        return parsed
    }

    @Test func theTextIsValidExpositionAndTheInputCountersRise() throws {
        let service = try ServiceFixture()
        let first = try scrape(service)
        usleep(1_000_000)
        let second = try scrape(service)

        // Each input, as GET /devices lists it.
        let devices = try #require(try service.request("GET", "/devices").json["devices"] as? [[String: Any]])
        #expect(devices.count == 2)
        for device in devices {
            let id = try #require(device["id"] as? String), media = try #require(device["mediaType"] as? String)
            let labels = ["input": id, "device": device["device"] as? String ?? "", "name": device["name"] as? String ?? "", "media": media]
            let counter = media == "video" ? "capctl_input_frames_captured_total" : "capctl_input_samples_captured_total"
            let dropped = media == "video" ? "capctl_input_frames_dropped_total" : "capctl_input_samples_dropped_total"
            let before = try #require(first.value(counter, labels), "no \(counter) with \(labels)")
            let after = try #require(second.value(counter, labels))
            // A second at 30 frames or 48000 sample frames a second.
            let least = media == "video" ? 10.0 : 16_000.0
            #expect(after - before > least, "\(counter): \(before) then \(after)")
            #expect(second.value(dropped, labels) == 0)
        }

        #expect(second.samples("capctl_build_info").count == 1)
        #expect(second.samples("capctl_build_info").first?.labels["version"]?.isEmpty == false)
        #expect(second.value("capctl_build_info") == 1)
        let uptime = try #require(second.value("capctl_uptime_seconds"))
        #expect(uptime > (first.value("capctl_uptime_seconds") ?? .infinity))
        // The process began at most a few seconds before the service opened its devices (/proc's boot time is in whole seconds).
        let start = try #require(second.value("process_start_time_seconds"))
        let sinceStart = Date().timeIntervalSince1970 - start
        #expect(sinceStart >= uptime - 1.5 && sinceStart < uptime + 10, "started \(sinceStart) s ago, uptime \(uptime) s")
        #expect((second.value("capctl_free_space_bytes") ?? 0) > 0)
        #expect(second.value("capctl_recordings_active") == 0)
        #expect(second.samples("capctl_recording_state").isEmpty)
        // The live views' counters of the camera from the start, with no view watched.
        for name in ["capctl_view_frames_encoded_total", "capctl_view_frames_sent_total", "capctl_view_sent_bytes_total",
                     "capctl_view_frames_dropped_total", "capctl_view_frames_skipped_total"] {
            #expect(second.value(name, ["camera": "0"]) == 0, "\(name)")
        }
        #expect(second.samples("capctl_view_viewers").isEmpty)
        // The first scrape's answer is counted by the second.
        #expect((second.value("capctl_http_requests_total", ["code": "200"]) ?? 0) >= 1)
        #expect(service.stop() == 0)
    }

    @Test func aRecordingsNumbersAreThoseOfItsProgressAndFinishedEvent() throws {
        let service = try ServiceFixture()
        let created = try service.request("POST", "/recordings", json: #"{"file": "metrics.mp4"}"#)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json["id"] as? String)
        #expect(service.waitForEvent("started", recording: id) != nil)
        usleep(1_500_000)

        // Between two progress reports asked before and after it.
        let before = try #require(try service.request("GET", "/recordings/\(id)").json["progress"] as? [String: Any])
        let running = try scrape(service)
        let after = try #require(try service.request("GET", "/recordings/\(id)").json["progress"] as? [String: Any])
        let labels = ["recording": id]
        for (metric, key) in [("capctl_recording_frames_total", "frames"), ("capctl_recording_bytes_total", "bytes"),
                              ("capctl_recording_audio_samples_total", "audioSamples")] {
            let value = try #require(running.value(metric, labels), "no \(metric)")
            let low = try #require(before[key] as? Double), high = try #require(after[key] as? Double)
            #expect(value >= low && value <= high, "\(metric) \(value), progress \(low) then \(high)")
        }
        #expect((running.value("capctl_recording_frames_total", labels) ?? 0) > 20)
        #expect((running.value("capctl_recording_duration_seconds", labels) ?? 0) > 0.5)
        #expect(running.value("capctl_recording_state", ["recording": id, "state": "running"]) == 1)
        #expect(running.value("capctl_recording_state", ["recording": id, "state": "paused"]) == 0)
        #expect(running.value("capctl_recording_state", ["recording": id, "state": "finished"]) == 0)
        #expect(running.value("capctl_recordings_active") == 1)
        #expect(running.samples("capctl_recording_end_info").isEmpty)

        #expect(try service.request("POST", "/recordings/\(id)/pause").status == 200)
        #expect(service.waitForEvent("paused", recording: id) != nil)
        let paused = try scrape(service)
        #expect(paused.value("capctl_recording_state", ["recording": id, "state": "paused"]) == 1)
        #expect(paused.value("capctl_recording_state", ["recording": id, "state": "running"]) == 0)
        #expect(try service.request("POST", "/recordings/\(id)/resume").status == 200)
        usleep(500_000)

        #expect(try service.request("POST", "/recordings/\(id)/stop").status == 200)
        let finished = try #require(service.waitForEvent("finished", recording: id))
        let ended = try scrape(service)
        for (metric, key) in [("capctl_recording_frames_total", "frames"), ("capctl_recording_bytes_total", "bytes"),
                              ("capctl_recording_audio_samples_total", "audioSamples"),
                              ("capctl_recording_dropped_frames_total", "droppedFrames"),
                              ("capctl_recording_dropped_audio_samples_total", "droppedAudioSamples")] {
            let reported = try #require(finished[key] as? Double, "no \(key) in \(finished)")
            #expect(ended.value(metric, labels) == reported, "\(metric): \(ended.value(metric, labels) ?? -1), finished says \(reported)")
        }
        let duration = try #require(finished["duration"] as? Double)
        #expect(abs((ended.value("capctl_recording_duration_seconds", labels) ?? 0) - duration) < 1e-9)
        #expect((ended.value("capctl_recording_frames_total", labels) ?? 0) >= (running.value("capctl_recording_frames_total", labels) ?? 0))
        #expect(ended.value("capctl_recording_state", ["recording": id, "state": "finished"]) == 1)
        #expect(ended.value("capctl_recording_state", ["recording": id, "state": "running"]) == 0)
        #expect(ended.value("capctl_recording_end_info", ["recording": id, "reason": "stopped"]) == 1)
        #expect(ended.value("capctl_recordings_active") == 0)
        #expect(service.stop() == 0)
    }

    @Test func streamsAreMeasuredWithoutTheirKeys() throws {
        let scratch = try ServiceSecurityFixture.Scratch()
        let server = try RTMPServer(directory: URL(fileURLWithPath: scratch.path))
        try server.start()
        defer { server.stop() }
        let refused = try freeLoopbackPort()
        let service = try ServiceFixture()
        let body = #"{"stream": ["rtmp://127.0.0.1:\#(server.port)/live/secret-key-4711", "rtmp://127.0.0.1:\#(refused)/live/other-secret-0815"]}"#
        let created = try service.request("POST", "/recordings", json: body)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json["id"] as? String)
        let first = ["recording": id, "stream": "1"], second = ["recording": id, "stream": "2"]

        // Up once nginx has the stream, and sending.
        var metrics = try scrape(service)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, metrics.value("capctl_stream_up", first) != 1 || (metrics.value("capctl_stream_sent_frames_total", first) ?? 0) < 10 {
            usleep(200_000)
            metrics = try scrape(service)
        }
        #expect(metrics.value("capctl_stream_up", first) == 1)
        #expect((metrics.value("capctl_stream_sent_bytes_total", first) ?? 0) > 1000)
        #expect((metrics.value("capctl_stream_connections_total", first) ?? 0) == 1)
        #expect(metrics.value("capctl_stream_up", second) == 0)
        #expect(metrics.value("capctl_stream_sent_bytes_total", second) == 0)
        #expect((metrics.value("capctl_stream_dropped_frames_total", second) ?? 0) > 0, "what the refused stream could not send is counted")
        #expect(metrics.samples("capctl_stream_up", first).first?.labels["url"] == "rtmp://127.0.0.1:\(server.port)/live")
        #expect(metrics.samples("capctl_stream_up", second).first?.labels["url"] == "rtmp://127.0.0.1:\(refused)/live")
        let text = try service.request("GET", "/metrics").text
        #expect(!text.contains("secret"), "a stream key in the metrics")

        #expect(try service.request("POST", "/recordings/\(id)/stop").status == 200)
        let finished = try #require(service.waitForEvent("finished", recording: id))
        let streams = try #require(finished["streams"] as? [[String: Any]])
        let ended = try scrape(service)
        #expect(ended.value("capctl_stream_up", first) == 0)
        #expect(ended.value("capctl_stream_sent_bytes_total", first) == streams.first?["bytes"] as? Double)
        #expect(ended.value("capctl_stream_sent_frames_total", first) == streams.first?["frames"] as? Double)
        #expect(ended.value("capctl_stream_dropped_frames_total", second) == streams.last?["droppedFrames"] as? Double)
        #expect(service.stop() == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func prometheusScrapesTheServiceWithItsToken() throws {
        let began = Date()
        let scratch = try ServiceSecurityFixture.Scratch()
        let token = "capctl-metrics-token-0123456789abcdef"
        let tokenFile = scratch.path + "/token"
        #expect(FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600]))
        let service = try ServiceFixture(["--video", "test-pattern", "--audio", "test-tone", "--token-file", tokenFile])
        let bearer = ["Authorization": "Bearer \(token)"]

        // The service's rules hold for /metrics: the token, and a Host that names it.
        #expect(try service.request("GET", "/metrics").status == 401)
        #expect(try service.request("GET", "/metrics", headers: ["Authorization": "Bearer wrong"]).status == 401)
        #expect(try service.request("GET", "/metrics", headers: bearer.merging(["Host": "metrics.example"]) { $1 }).status == 403)
        _ = try scrape(service, headers: bearer)
        let created = try service.request("POST", "/recordings", json: #"{"file": "scraped.mp4"}"#, headers: bearer)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json["id"] as? String)

        let prometheus = try PrometheusServer(directory: scratch.path + "/prometheus", target: "127.0.0.1:\(service.port)", credentialsFile: tokenFile)
        defer { prometheus.stop() }

        // The target is up: Prometheus took the exposition, with the token from its file.
        var target: [String: Any]?
        var deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let targets = try prometheus.get("/api/v1/targets")
            target = ((targets["data"] as? [String: Any])?["activeTargets"] as? [[String: Any]])?.first
            if target?["health"] as? String == "up" { break }
            usleep(250_000)
        }
        #expect(target?["health"] as? String == "up", "target: \(target ?? [:])\n\(prometheus.log)")
        #expect(target?["lastError"] as? String == "")

        // The recording's frame counter rises from one scrape to the next.
        var values: [Double] = []
        deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let value = try prometheus.query("capctl_recording_frames_total{recording=\"\(id)\"}").first, value > (values.last ?? -1) {
                values.append(value)
                if values.count == 3 { break }
            }
            usleep(250_000)
        }
        #expect(values.count == 3, "the frames Prometheus saw: \(values)")
        // The camera's rate over the last seconds, as an alert on a stalled camera would ask it.
        let rates = try prometheus.query("rate(capctl_input_frames_captured_total{media=\"video\"}[5s])")
        #expect(rates.count == 1 && rates[0] > 5, "rate: \(rates)")
        let metadata = try prometheus.get("/api/v1/metadata?metric=capctl_input_frames_captured_total")
        let kinds = ((metadata["data"] as? [String: Any])?["capctl_input_frames_captured_total"] as? [[String: Any]])?.compactMap { $0["type"] as? String }
        #expect(kinds == ["counter"], "\(metadata)")

        prometheus.stop()
        #expect(try service.request("POST", "/recordings/\(id)/stop", headers: bearer).status == 200)
        #expect(service.stop() == 0)
        let seconds = Date().timeIntervalSince(began)
        #expect(seconds < 40, "took \(seconds) s")
    }
}

/// How stream URLs show in labels.
@Suite struct ServiceMetricsLabelTests {
    @Test func aStreamLabelHasNoKeyCredentialsOrQuery() throws {
        func label(_ url: String) throws -> String { CaptureService.streamLabel(try StreamDestination(url)) }
        #expect(try label("rtmp://media.example:1935/live/cam1-KEY") == "rtmp://media.example:1935/live")
        #expect(try label("rtmp://user:password@media.example/app/KEY") == "rtmp://media.example/app")
        #expect(try label("rtmp://media.example/KEY") == "rtmp://media.example")
        #expect(try label("srt://media.example:8890?streamid=publish:cam1&passphrase=secret") == "srt://media.example:8890")
        #expect(try label("udp://239.0.0.1:5000") == "udp://239.0.0.1:5000")
    }
}

/// Debian's Prometheus (/usr/bin/prometheus, scripts/setup installs it) on
/// 127.0.0.1, scraping one target every second with a token from a file, as
/// README's scrape configuration does; its data in a folder of the test's.
final class PrometheusServer {
    let port: Int
    let directory: String
    private let process = Process()

    init(directory: String, target: String, credentialsFile: String) throws {
        let binary = "/usr/bin/prometheus"
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw ServerFailure(message: "no \(binary): run scripts/setup, which installs Debian's prometheus")
        }
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try freeLoopbackPort()
        let configuration = """
        global:
          scrape_interval: 1s
          scrape_timeout: 1s
        scrape_configs:
          - job_name: capctl
            authorization:
              credentials_file: \(credentialsFile)
            static_configs:
              - targets: ["\(target)"]
        """
        try configuration.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: directory + "/prometheus.log", contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/prometheus.log"))
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                             "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning {
            if (try? PendingRequest(method: "GET", url: "http://127.0.0.1:\(port)/-/ready", body: nil).response().status) == 200 { return }
            usleep(200_000)
        }
        let output = self.log
        stop()
        throw ServerFailure(message: "prometheus did not get ready on 127.0.0.1:\(port): \(output)")
    }

    deinit { stop() }

    var log: String { (try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? "" }

    /// An API answer's JSON object.
    func get(_ pathAndQuery: String) throws -> [String: Any] {
        let response = try PendingRequest(method: "GET", url: "http://127.0.0.1:\(port)\(pathAndQuery)", body: nil).response()
        guard response.status == 200 else { throw ServerFailure(message: "prometheus \(pathAndQuery): \(response.status) \(response.text)") }
        return try response.object()
    }

    /// The values of an instant query's samples.
    func query(_ promql: String) throws -> [Double] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = promql.addingPercentEncoding(withAllowedCharacters: allowed) ?? promql
        let answer = try get("/api/v1/query?query=\(encoded)")
        let result = (answer["data"] as? [String: Any])?["result"] as? [[String: Any]] ?? []
        return result.compactMap { ($0["value"] as? [Any])?.last as? String }.compactMap(Double.init)
    }

    /// SIGTERM, and SIGKILL if it has not ended within 5 s.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
