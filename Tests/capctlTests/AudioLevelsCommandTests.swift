import Foundation
import Testing

/// `capctl record`'s sound levels and microphone watchdog, on test tones of
/// known levels: `audioLevels` in progress events, `audio-silent` and
/// `audio-restored`, measured on the capture clock.
@Suite(.serialized) struct AudioLevelsCommandTests {
    /// The events of a finished recording, in order.
    static func events(_ result: CapctlRun) -> [[String: Any]] {
        result.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
    }

    static func named(_ name: String, in events: [[String: Any]]) -> [[String: Any]] {
        events.filter { $0["event"] as? String == name }
    }

    /// An event's time (UTC, ISO 8601 with milliseconds) in seconds since 1970.
    static func seconds(_ text: Any?) throws -> Double {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require((text as? String).flatMap(formatter.date(from:)), "not a time: \(text ?? "nil")")
        return date.timeIntervalSince1970
    }

    @Test func progressCarriesEachMicrophonesPeakAndRMSPerChannel() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record", "--video", "test-pattern", "--size", "160x120", "--audio", "test-tone:1000,level=-6",
                                        "--audio", "test-tone:500,level=-20", "--max-duration", "1.5", "--progress", "json",
                                        "--progress-interval", "0.25", "levels.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let progress = Self.named("progress", in: Self.events(result))
        #expect(progress.count >= 3)
        for event in progress {
            let levels = try #require(event["audioLevels"] as? [[String: Any]], "\(event)")
            #expect(levels.map { $0["microphone"] as? Int } == [1, 2])
            #expect(levels.map { $0["device"] as? String } == ["test-tone:1000", "test-tone:500,level=-20"])
            for (entry, (peak, rms)) in zip(levels, [(-6.0, -9.0), (-20.0, -23.0)]) {
                let peaks = try #require(entry["peak"] as? [Double]), means = try #require(entry["rms"] as? [Double])
                #expect(peaks.count == 2 && means.count == 2, "\(entry)")
                #expect(peaks.allSatisfy { abs($0 - peak) <= 0.2 }, "\(entry)")
                #expect(means.allSatisfy { abs($0 - rms) <= 0.2 }, "\(entry)")
            }
        }
    }

    @Test func aSilentMicrophoneIsToldOnceAfterTheTimeout() throws {
        let scratch = try RecordScratch()
        // Digital silence, and tones peaking at -70 and -50 dBFS: the first two are below the -60 dBFS threshold.
        let result = try CapctlRun.run(["record", "--video", "test-pattern", "--size", "160x120", "--audio", "test-tone,level=silence",
                                        "--audio", "test-tone:1000,level=-70", "--audio", "test-tone:1000,level=-50",
                                        "--silence-timeout", "0.5", "--max-duration", "2", "--progress", "json",
                                        "--progress-interval", "0.25", "watch.mp4"], in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = Self.events(result)
        let silent = Self.named("audio-silent", in: events)
        #expect(silent.map { $0["microphone"] as? Int }.sorted { ($0 ?? 0) < ($1 ?? 0) } == [1, 2], "\(silent)")
        #expect(Self.named("audio-restored", in: events).isEmpty)
        let started = try Self.seconds(Self.named("started", in: events).first?["time"])
        for event in silent {
            #expect(event["threshold"] as? Double == -60)
            // Silent from the first buffer, told once half a second of it had been captured.
            let since = try Self.seconds(event["since"]), told = try Self.seconds(event["time"])
            #expect(abs(since - started) < 0.15, "since \(since - started) s after the start")
            #expect(told - since >= 0.5 - 0.03 && told - since < 1.5, "told \(told - since) s after it began")
        }
        #expect(silent.first { $0["microphone"] as? Int == 1 }?["device"] as? String == "test-tone,level=silence")
        // Digital silence reads the floor, -160 dBFS.
        let levels = try #require(Self.named("progress", in: events).last?["audioLevels"] as? [[String: Any]])
        #expect(levels.first?["peak"] as? [Double] == [-160, -160])
        #expect(levels.first?["rms"] as? [Double] == [-160, -160])
        let finished = try #require(events.last)
        #expect(finished["event"] as? String == "finished" && finished["reason"] as? String == "max-duration")
    }

    @Test func soundThatStartsLateIsToldRestoredWithHowLongTheSilenceLasted() throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record", "--audio", "test-tone:1000,delay=1.5", "--silence-timeout", "0.5",
                                        "--silence-threshold", "-50", "--max-duration", "2.5", "--progress", "json", "late.wav"],
                                       in: scratch.url)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = Self.events(result)
        let watched = events.filter { ["audio-silent", "audio-restored"].contains($0["event"] as? String) }
        #expect(watched.map { $0["event"] as? String } == ["audio-silent", "audio-restored"])
        guard watched.count == 2 else { return }
        #expect(watched[0]["threshold"] as? Double == -50)
        #expect(watched[0]["since"] as? String == watched[1]["since"] as? String)
        // Measured on the samples' clock: exactly the delay, 75 buffers of 20 ms.
        let silentFor = try #require(watched[1]["silentFor"] as? Double)
        #expect(abs(silentFor - 1.5) < 0.001, "\(silentFor)")
        #expect(watched[1]["microphone"] as? Int == 1 && watched[1]["device"] as? String == "test-tone:1000,delay=1.5")
        #expect(watched[1]["threshold"] == nil && watched[0]["silentFor"] == nil)
    }
}

extension AudioLevelsCommandTests {
    /// `capctl record` on a terminal (a pseudo-terminal that script(1) makes), and what it printed there.
    static func onATerminal(_ arguments: [String], in directory: URL) throws -> String {
        let command = ([CapctlRun.binary.path, "record"] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", command, "/dev/null"]
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.merging(["LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"]) { $1 }
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self)
    }

    @Test func theStatusLineShowsAMeterOnATerminalOnly() throws {
        let scratch = try RecordScratch()
        let options = ["--audio", "test-tone:1000,level=-12", "--max-duration", "1.2", "--progress-interval", "0.2"]
        let shown = try Self.onATerminal(options + ["tty.wav"], in: scratch.url)
        // -12 dBFS on a bar from -60 to 0 of 8 cells: 6 cells and 3 eighths.
        #expect(shown.contains("mic  -12 dB ██████▍·"), "\(shown)")
        let piped = try CapctlRun.run(["record"] + options + ["--progress", "text", "piped.wav"], in: scratch.url)
        #expect(piped.status == 0)
        #expect(piped.stdout.contains("rec  "), "\(piped.stdout)")
        #expect(!piped.stdout.contains("mic"), "\(piped.stdout)")
    }
}

/// The service takes the watchdog as record's options in JSON, and sends its events and levels.
@Suite(.serialized) struct ServiceAudioLevelsTests {
    @Test func aServiceRecordingWatchesItsMicrophone() throws {
        let service = try ServiceFixture(["--video", "test-pattern", "--size", "160x120", "--audio", "test-tone,level=silence"])
        let created = try service.request("POST", "/recordings", json: #"{"file": "quiet.mp4", "silenceTimeout": 0.5, "silenceThreshold": -50, "maxDuration": 3}"#)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json["id"] as? String)
        let silent = try #require(service.waitForEvent("audio-silent", recording: id, seconds: 20))
        #expect(silent["threshold"] as? Double == -50 && silent["microphone"] as? Int == 1)
        let progress = try #require(service.waitForEvent("progress", recording: id))
        let levels = try #require(progress["audioLevels"] as? [[String: Any]])
        #expect(levels.first?["peak"] as? [Double] == [-160, -160])
        let status = try service.request("GET", "/recordings/\(id)").json
        #expect((status["progress"] as? [String: Any])?["audioLevels"] != nil)
        #expect(service.waitForEvent("finished", recording: id) != nil)
    }

    @Test func aServiceWithoutAMicrophoneRefusesTheWatchdog() throws {
        let service = try ServiceFixture(["--video", "test-pattern", "--size", "160x120"])
        let refused = try service.request("POST", "/recordings", json: #"{"file": "x.mp4", "silenceTimeout": "10s"}"#)
        #expect(refused.status == 400)
        #expect(refused.text.contains("silenceTimeout listens to microphones"), "\(refused.text)")
        #expect(!FileManager.default.fileExists(atPath: service.file("x.mp4")))
        let threshold = try service.request("POST", "/recordings", json: #"{"file": "y.mp4", "silenceThreshold": -40}"#)
        #expect(threshold.status == 400)
        // Every setting named as JSON names it, also one the body does not hold.
        #expect(threshold.text.contains("silenceThreshold sets what silenceTimeout counts as silence; add silenceTimeout TIME"), "\(threshold.text)")
        #expect(!threshold.text.contains("--"), "\(threshold.text)")
    }
}
