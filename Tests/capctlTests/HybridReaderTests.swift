import Foundation
import Glibc
import Testing

/// Other programs read a finished recording as the regular MP4 it is:
/// MediaInfo, and Chromium playing it from a server that does not answer
/// range requests (so it reads the file from the start, as a non-seeking
/// reader does). Needs Debian's `mediainfo` and `chromium`.
@Suite(.serialized) struct HybridReaderTests {
    /// A web server on 127.0.0.1 that answers every GET with the whole file
    /// (200, never 206, no Accept-Ranges), and takes `GET /result?…`
    /// reports from the page into result.txt. Prints its port.
    static let server = #"""
    import http.server, os, sys, urllib.parse
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args): pass
        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            if url.path == '/result':
                with open('result.txt', 'a') as f: f.write(urllib.parse.unquote(url.query) + '\n')
                self.send_response(204); self.end_headers(); return
            with open('requests.txt', 'a') as f: f.write('%s range=%s\n' % (url.path, self.headers.get('Range')))
            try:
                data = open(os.path.join(os.getcwd(), url.path.lstrip('/')), 'rb').read()
            except OSError:
                self.send_response(404); self.end_headers(); return
            self.send_response(200)
            self.send_header('Content-Type', 'text/html' if url.path.endswith('.html') else 'video/mp4')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """#

    /// Reports the duration once the metadata is read, and the duration
    /// and position when playback (at 4×) ends.
    static let page = #"""
    <!doctype html><video id=v muted preload=auto></video><script>
    const v = document.getElementById('v');
    const name = location.hash.slice(1);
    function report(what) {
      fetch('/result?' + encodeURIComponent([name, what, v.duration, v.currentTime, v.error ? v.error.message : ''].join(' ')));
    }
    v.addEventListener('loadedmetadata', () => { report('metadata'); v.playbackRate = 4; v.play(); });
    v.addEventListener('ended', () => report('ended'));
    v.addEventListener('error', () => report('error'));
    v.src = name;
    </script>
    """#

    final class Server {
        let process = Process()
        let port: Int

        init(in directory: URL) throws {
            try HybridReaderTests.server.write(to: directory.appendingPathComponent("server.py"), atomically: true, encoding: .utf8)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "server.py"]
            process.currentDirectoryURL = directory
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line.append(byte) }
            port = Int(String(decoding: line, as: UTF8.self)) ?? 0
        }

        deinit { HybridReaderTests.stop(process) }
    }

    /// Stops a process this test started: SIGTERM, then SIGKILL after 5 s
    /// (a child of the test runner may inherit SIGTERM blocked).
    static func stop(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date(timeIntervalSinceNow: 5)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// What Chromium's <video> says about `name`: (what, duration, currentTime) reports.
    static func chromium(_ name: String, port: Int, in directory: URL) throws -> [(what: String, duration: Double, time: Double)] {
        let results = directory.appendingPathComponent("result.txt")
        try? FileManager.default.removeItem(at: results)
        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        browser.arguments = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
                             "--no-first-run", "--mute-audio", "--user-data-dir=" + directory.appendingPathComponent("profile-\(name)").path,
                             "http://127.0.0.1:\(port)/page.html#\(name)"]
        browser.standardOutput = FileHandle.nullDevice
        browser.standardError = FileHandle.nullDevice
        try browser.run()
        defer { stop(browser) }
        let deadline = Date(timeIntervalSinceNow: 60)
        var reports = [(what: String, duration: Double, time: Double)]()
        while Date() < deadline {
            let text = (try? String(contentsOf: results, encoding: .utf8)) ?? ""
            reports = text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: false)
                guard fields.count >= 4, let duration = Double(fields[2]), let time = Double(fields[3]) else { return nil }
                return (String(fields[1]), duration, time)
            }
            if reports.contains(where: { $0.what == "ended" || $0.what == "error" }) { break }
            usleep(100_000)
        }
        return reports
    }

    /// MediaInfo's durations (seconds) of the general, video and audio parts, and the video frame count.
    static func mediainfo(_ path: String) throws -> (general: Double, video: Double, audio: Double, frames: Int) {
        let result = try runTool("mediainfo", ["--Output=JSON", path])
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let tracks = (object?["media"] as? [String: Any])?["track"] as? [[String: Any]] ?? []
        func field(_ type: String, _ key: String) -> String? { tracks.first { $0["@type"] as? String == type }?[key] as? String }
        return (Double(field("General", "Duration") ?? "") ?? 0, Double(field("Video", "Duration") ?? "") ?? 0,
                Double(field("Audio", "Duration") ?? "") ?? 0, Int(field("Video", "FrameCount") ?? "") ?? 0)
    }

    @Test func mediaInfoAndChromiumWithoutRangeRequestsAgreeOnTheDuration() throws {
        let scratch = try RecordScratch()
        let recorded = try CapctlRun.run(["record", "--video", "test-pattern", "--audio", "test-tone", "--size", "320x240",
                                          "--max-duration", "4", "--progress", "json", "rec.mp4"], in: scratch.url)
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let path = scratch.file("rec.mp4")
        let info = try mediaInfo(path)
        let duration = try #require(info["duration"] as? Double)
        #expect(abs(duration - 4) < 1e-3)

        let media = try Self.mediainfo(path)
        #expect(abs(media.general - duration) < 0.002, "MediaInfo: \(media.general) s")
        #expect(abs(media.video - duration) < 0.002, "MediaInfo video: \(media.video) s")
        #expect(abs(media.audio - duration) < 0.025, "MediaInfo audio: \(media.audio) s")
        #expect(media.frames == track(info, "video")?["frames"] as? Int)

        try Self.page.write(toFile: scratch.file("page.html"), atomically: true, encoding: .utf8)
        let server = try Server(in: scratch.url)
        try #require(server.port > 0)
        let reports = try Self.chromium("rec.mp4", port: server.port, in: scratch.url)
        let metadata = try #require(reports.first { $0.what == "metadata" }, "Chromium reported \(reports)")
        #expect(abs(metadata.duration - duration) < 0.05, "Chromium: \(metadata.duration) s at first")
        let ended = try #require(reports.first { $0.what == "ended" }, "Chromium reported \(reports)")
        #expect(abs(ended.duration - duration) < 0.05 && abs(ended.time - duration) < 0.05, "Chromium at the end: \(ended)")
        // The server never answered a range: the whole file, from the start, each time.
        let requests = try String(contentsOfFile: scratch.file("requests.txt"), encoding: .utf8)
        #expect(requests.contains("/rec.mp4"))
    }
}
