import Foundation
import Testing

/// `capctl serve`'s live view (GET /stream.mjpg, /snapshot.jpg) read by real
/// clients on 127.0.0.1: curl, ffmpeg's mpjpeg demuxer, OpenCV's VideoCapture
/// (Debian's python3-opencv) and a socket client that checks every part
/// (Tests/Service/mjpeg_clients.py).
@Suite(.serialized) struct ServiceLiveViewTests {
    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Service/mjpeg_clients.py").path

    /// One run of the clients script; its JSON answer.
    static func client(_ arguments: [String]) throws -> [String: Any] {
        // Debian's python3, which has python3-opencv (a python3 earlier in PATH may not).
        let result = try runTool("/usr/bin/python3", [clients] + arguments)
        guard result.status == 0, let answer = jsonObject(result.stdout) else {
            throw ServiceFixtureError.notJSON("mjpeg_clients.py \(arguments.joined(separator: " ")) exited \(result.status): \(result.stdout)")
        }
        return answer
    }

    /// The service's live views (GET /session's views).
    static func views(_ service: ServiceFixture) throws -> [[String: Any]] {
        try service.request("GET", "/session").object()["views"] as? [[String: Any]] ?? []
    }

    @Test func snapshotIsAJPEGOfTheNewestFrameAtTheAskedSize() throws {
        let service = try ServiceFixture(["--video", "test-pattern"])
        let before = Date().timeIntervalSince1970
        let first = try service.request("GET", "/snapshot.jpg?width=320")
        #expect(first.status == 200)
        #expect(first.headers["content-type"] == "image/jpeg")
        #expect(first.headers["content-length"] == String(first.body.count))
        #expect(Array(first.body.prefix(2)) == [0xFF, 0xD8] && Array(first.body.suffix(2)) == [0xFF, 0xD9])
        let size = try Self.imageSize(first.body)
        #expect(size == "320x240")
        // Its frame was captured just now, not when the service started.
        let captured = Double(first.headers["x-timestamp"] ?? "") ?? 0
        #expect(abs(captured - before) < 2, "X-Timestamp \(captured) against \(before)")
        usleep(300_000)
        let second = try service.request("GET", "/snapshot.jpg?width=320")
        #expect(second.status == 200)
        #expect(second.body != first.body, "the picture moves between two snapshots 0.3 s apart")
        #expect((Double(second.headers["x-timestamp"] ?? "") ?? 0) > captured)
        // At the camera's size by default.
        #expect(try Self.imageSize(service.request("GET", "/snapshot.jpg").body) == "640x480")
    }

    @Test func ffmpegReadsTheStreamAndItsPictureMoves() throws {
        let service = try ServiceFixture(["--video", "test-pattern"])
        let result = try runTool("ffmpeg", ["-v", "error", "-f", "mpjpeg", "-i", "\(service.url)/stream.mjpg?width=320&fps=10",
                                            "-frames:v", "20", "-f", "framemd5", "-"])
        #expect(result.status == 0)
        let frames = result.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(frames.count == 20)
        // 320x240 yuvj422p or yuvj420p: the size of a decoded frame shows the view's size.
        let sizes = Set(frames.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }[4] })
        #expect(sizes == ["115200"] || sizes == ["153600"], "decoded frame sizes \(sizes)")
        let pictures = Set(frames.map { $0.split(separator: ",").last! })
        #expect(pictures.count == 20, "every picture differs from the others")
    }

    @Test func everyPartIsAWholeJPEGAtTheAskedSizeAndRate() throws {
        let service = try ServiceFixture(["--video", "test-pattern,size=1280x720,fps=30"])
        let read = try Self.client(["read", "\(service.url)/stream.mjpg?width=640&fps=10", "3"])
        #expect(read["status"] as? Int == 200)
        #expect(read["contentType"] as? String == "multipart/x-mixed-replace; boundary=capctl-frame")
        #expect((read["errors"] as? [String])?.isEmpty == true, "\(read["errors"] ?? "")")
        #expect(read["sizes"] as? [[Int]] == [[640, 360]])
        let fps = read["fps"] as? Double ?? 0
        #expect(abs(fps - 10) < 1.5, "\(fps) pictures a second")
        // Every third frame of the camera's 30: the test pattern's frame numbers step by 3.
        let frames = read["frames"] as? [Int] ?? []
        let steps = zip(frames.dropFirst(), frames).map { $0 - $1 }
        #expect(steps.count >= 20)
        #expect(steps.filter { $0 == 3 }.count >= steps.count - 2, "frame steps \(steps)")
        let latencies = (read["latencies"] as? [Double] ?? []).sorted()
        #expect(!latencies.isEmpty && latencies[latencies.count / 2] < 0.5, "median latency \(latencies)")
    }

    @Test func openCVReadsFramesAtTheAskedSizeAndRate() throws {
        let service = try ServiceFixture(["--video", "test-pattern,size=1280x720,fps=30"])
        let read = try Self.client(["opencv", "\(service.url)/stream.mjpg?width=640&fps=15", "3"])
        #expect(read["opened"] as? Bool == true)
        #expect(read["shapes"] as? [[Int]] == [[360, 640, 3]])
        let fps = read["fps"] as? Double ?? 0
        #expect(abs(fps - 15) < 2, "\(fps) frames a second")
    }

    @Test func sizesTheCameraCannotGiveAreScaledAndNonsenseIsRefused() throws {
        let service = try ServiceFixture(["--video", "test-pattern", "--audio", "test-tone"])
        // The height follows the camera's 4:3, rounded to an even number; both sides as asked.
        #expect(try Self.imageSize(service.request("GET", "/snapshot.jpg?width=500").body) == "500x376")
        #expect(try Self.imageSize(service.request("GET", "/snapshot.jpg?height=100").body) == "134x100")
        #expect(try Self.imageSize(service.request("GET", "/snapshot.jpg?width=300&height=300").body) == "300x300")
        for query in ["width=0", "width=-4", "width=99999", "width=abc", "height=1", "fps=0", "fps=-1", "fps=1/0", "fps=x",
                      "quality=0", "quality=101", "width=1.5"] {
            for path in ["/stream.mjpg", "/snapshot.jpg"] where !(path == "/snapshot.jpg" && query.hasPrefix("fps")) {
                let answer = try service.request("GET", "\(path)?\(query)")
                #expect(answer.status == 400, "\(path)?\(query) answered \(answer.status)")
                #expect((try? answer.object()["error"] as? String)?.isEmpty == false, "\(path)?\(query): \(answer.text)")
            }
        }
        #expect(try service.request("GET", "/stream.mjpg?camera=1").status == 404, "input 1 is the microphone")
        #expect(try service.request("GET", "/stream.mjpg?camera=9").status == 404)
    }

    @Test func aCameraThatSendsJPEGIsPassedThroughAtItsOwnSize() throws {
        let folder = NSTemporaryDirectory() + "/capctl-view-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clip = folder + "/clip.mkv"
        let made = try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "20",
                                          "-c:v", "mjpeg", "-q:v", "5", clip])
        #expect(made.status == 0)
        // The file's packets, as its JPEG pictures' checksums.
        let packets = try runTool("ffmpeg", ["-v", "error", "-i", clip, "-c", "copy", "-f", "framemd5", "-"])
        let stored = Set(packets.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last!).trimmingCharacters(in: .whitespaces) })
        #expect(stored.count > 500)

        let service = try ServiceFixture(["--video", "file:\(clip)"])
        let whole = try runTool("ffmpeg", ["-v", "error", "-f", "mpjpeg", "-i", "\(service.url)/stream.mjpg", "-frames:v", "10",
                                           "-c", "copy", "-f", "framemd5", "-"])
        let sent = whole.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last!).trimmingCharacters(in: .whitespaces) }
        #expect(sent.count == 10)
        #expect(sent.allSatisfy(stored.contains), "the camera's own pictures, byte for byte")
        // While watched, the view says so.
        let watcher = try service.start("GET", "/stream.mjpg")
        var passing: Bool?
        for _ in 0..<100 where passing == nil {
            // Once it has made a picture.
            if let view = try Self.views(service).first, view["framesMade"] as? Int ?? 0 > 0 { passing = view["passesThrough"] as? Bool }
            usleep(50_000)
        }
        #expect(passing == true)
        withExtendedLifetime(watcher) {}
        // A smaller view of it is made anew.
        let smaller = try runTool("ffmpeg", ["-v", "error", "-f", "mpjpeg", "-i", "\(service.url)/stream.mjpg?width=160", "-frames:v", "5",
                                             "-c", "copy", "-f", "framemd5", "-"])
        let scaled = smaller.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last!).trimmingCharacters(in: .whitespaces) }
        #expect(scaled.count == 5 && !scaled.contains(where: stored.contains))
    }

    @Test func viewersBeyondTheLimitAreRefused() throws {
        let service = try ServiceFixture(["--video", "test-pattern", "--max-viewers", "2"])
        // Two viewers watching; a third is refused with 503, and a snapshot is not a viewer.
        let first = try service.start("GET", "/stream.mjpg?width=320")
        let second = try service.start("GET", "/stream.mjpg?width=160")
        var watching = 0
        for _ in 0..<100 where watching < 2 {
            watching = try Self.views(service).reduce(0) { $0 + ($1["viewers"] as? Int ?? 0) }
            usleep(50_000)
        }
        #expect(watching == 2)
        let refused = try service.request("GET", "/stream.mjpg?width=320")
        #expect(refused.status == 503)
        #expect((refused.json["error"] as? String)?.contains("--max-viewers") == true, "\(refused.text)")
        #expect(try service.request("GET", "/snapshot.jpg").status == 200)
        withExtendedLifetime((first, second)) {}
    }

    @Test func viewersThatHangUpMidFrameAreLetGo() throws {
        let service = try ServiceFixture(["--video", "test-pattern", "--max-viewers", "3"])
        // Twenty viewers, one after another, each gone in the middle of a picture: none keeps a
        // place, though the view's next picture (which would find the connection gone) is 30 s away.
        let cut = try Self.client(["cut", "\(service.url)/stream.mjpg?width=320&fps=1/30", "20"])
        #expect(cut["hungUp"] as? Int == 20)
        #expect(cut["refused"] as? [Int] == [])
        var left = -1
        for _ in 0..<100 {
            left = try Self.views(service).reduce(0) { $0 + ($1["viewers"] as? Int ?? 0) }
            if left == 0 { break }
            usleep(50_000)
        }
        #expect(left == 0, "viewers still counted after hanging up")
        let read = try Self.client(["read", "\(service.url)/stream.mjpg?width=320", "1.5"])
        #expect(read["status"] as? Int == 200)
        #expect((read["errors"] as? [String])?.isEmpty == true)
        #expect((read["fps"] as? Double ?? 0) > 25)
    }

    /// Fifty viewers, ten of which never read, beside a recording: the
    /// recording holds every frame it reports and loses none; the readers
    /// keep the view's rate; the silent ones miss pictures (counted).
    @Test(.timeLimit(.minutes(3)))
    func stalledViewersHoldBackNeitherTheRecordingNorTheOtherViewers() throws {
        let service = try ServiceFixture(["--video", "test-pattern,fps=30"])
        let created = try service.request("POST", "/recordings", json: #"{"file": "beside.mp4", "maxDuration": 8, "preset": "ultrafast"}"#)
        #expect(created.status == 201)
        let id = created.json["id"] as? String ?? ""
        let crowdRun = Process()
        crowdRun.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        crowdRun.arguments = [Self.clients, "crowd", "\(service.url)/stream.mjpg?quality=95&fps=15", "6", "50", "10"]
        let crowdOutput = Pipe()
        crowdRun.standardOutput = crowdOutput
        try crowdRun.run()
        // The views while everyone is connected: the silent viewers have missed pictures by now.
        sleep(5)
        let views = try Self.views(service)
        let answer = crowdOutput.fileHandleForReading.readDataToEndOfFile()
        crowdRun.waitUntilExit()
        let crowd = jsonObject(String(decoding: answer, as: UTF8.self)) ?? [:]
        #expect(crowd["stalledStatus"] as? [Int] == Array(repeating: 200, count: 10))
        #expect(views.first?["viewers"] as? Int == 50, "\(views)")
        let readers = crowd["readers"] as? [[String: Any]] ?? []
        #expect(readers.count == 40)
        for (index, reader) in readers.enumerated() {
            let fps = reader["fps"] as? Double ?? 0
            #expect(reader["status"] as? Int == 200 && fps > 12.5, "viewer \(index): \(reader)")
        }
        // The silent viewers missed pictures, and that is counted.
        let dropped = views.reduce(0) { $0 + ($1["framesDropped"] as? Int ?? 0) }
        #expect(dropped > 0, "views: \(views)")
        guard let finished = service.waitForEvent("finished", recording: id, seconds: 30) else {
            Issue.record("the recording did not finish")
            return
        }
        #expect(finished["reason"] as? String == "max-duration")
        #expect(finished["dropped"] as? Int == 0, "\(finished)")
        let reported = finished["frames"] as? Int ?? 0
        let counted = try runTool("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
                                              "-of", "csv=p=0", service.file("beside.mp4")])
        #expect(Int(counted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == reported)
        #expect(reported >= 238, "8 s at 30 fps: \(reported) frames")
    }

    /// "WxH" of a JPEG file, read by ffprobe.
    static func imageSize(_ data: Data) throws -> String {
        let path = NSTemporaryDirectory() + "/capctl-view-\(UUID().uuidString).jpg"
        try data.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let probe = try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=s=x:p=0", path])
        return probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
