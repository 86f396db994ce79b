import CapctlService
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// The service's events as a test reads them: every JSON line from the
/// subscription on (made when the log is), kept in order. A test waits for
/// the event that matters rather than for a time.
final class EventLog: Sendable {
    private let lines = Mutex<[String]>([])
    private let reader = Mutex<Task<Void, Never>?>(nil)

    /// Subscribes now: every event published after this call is in the log.
    init(_ events: ServiceEvents) {
        let stream = events.subscribe()
        // The stream ends when the service shuts down (its events close).
        reader.withLock { $0 = Task { for await line in stream { self.lines.withLock { $0.append(line) } } } }
    }

    deinit { reader.withLock { $0?.cancel() } }

    /// Every event so far, parsed, in order.
    var all: [[String: Any]] { lines.withLock { $0 }.compactMap(jsonObject) }

    /// The events named `name` (of `recording`, if given) so far, in order.
    func events(_ name: String, recording: String? = nil) -> [[String: Any]] {
        all.filter { $0["event"] as? String == name && (recording == nil || $0["recording"] as? String == recording) }
    }

    /// The first event named `name` (of `recording`) that meets `condition`,
    /// waiting for it at most `seconds` (a bound on a hang, not a timing).
    func wait(_ name: String, recording: String? = nil, seconds: Double = 30,
              where condition: ([String: Any]) -> Bool = { _ in true }) async -> [String: Any]? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            if let found = events(name, recording: recording).first(where: condition) { return found }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A JSON object written as text, or nil.
func jsonObject(_ text: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
}

/// A recording document's frames so far (`progress.frames`).
func recordedFrames(_ document: [String: Any]) -> Int {
    (document["progress"] as? [String: Any])?["frames"] as? Int ?? 0
}

extension TestClientProtocol {
    /// GETs `/recordings/ID` until its progress holds at least `frames` frames; answers the document, or nil after 60 s.
    func waitForFrames(_ frames: Int, recording id: String) async throws -> [String: Any]? {
        try await poll("/recordings/\(id)") { recordedFrames($0) >= frames }
    }

    /// The frames camera `index` (of GET /devices) has captured so far.
    func capturedFrames(camera index: Int = 0) async throws -> Int {
        let devices = try #require(try await send(.get, "/devices").object["devices"] as? [[String: Any]])
        return try #require(devices[index]["framesCaptured"] as? Int, "\(devices)")
    }
}

extension TestResponse {
    /// A header by its name.
    func header(_ name: String) -> String? {
        HTTPFields.Element.Name(name).flatMap { headers[$0] }
    }

    var data: Data { Data(body.readableBytesView) }
}

/// Runs a tool found on PATH; answers its exit status and stdout.
func runTool(_ name: String, _ arguments: [String]) throws -> (status: Int32, stdout: String) {
    let (status, data) = try toolData(name, arguments)
    return (status, String(decoding: data, as: UTF8.self))
}

/// Runs a tool found on PATH; answers its exit status and stdout's bytes.
func toolData(_ name: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [name] + arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, data)
}

/// The built `capctl` beside the test runner (the package's tests are one
/// runner in the build products directory): the command line a document is compared with.
func capctl(_ arguments: [String]) throws -> (status: Int32, stdout: String) {
    let process = Process()
    process.executableURL = Bundle.main.bundleURL.appendingPathComponent("capctl")
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Frames ffmpeg decodes from a stream (0 when it cannot read the file).
func decodedFrames(_ path: String, stream: String = "v:0") throws -> Int {
    let result = try runTool("ffprobe", ["-v", "error", "-count_frames", "-select_streams", stream, "-show_entries",
                                         "stream=nb_read_frames", "-of", "csv=p=0", path])
    return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
}

/// `WIDTHxHEIGHT` of a picture file, as ffprobe reads it.
func probedSize(_ path: String) throws -> String {
    try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0:s=x", path])
        .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// The names of the files in a folder, sorted.
func files(in folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
}

/// A recording's files, as its finished event names them, each holding the
/// frames its segment event reported; answers the finished event and the frames in all.
func checkFiles(_ log: EventLog, folder: String, recording: String) async throws -> (finished: [String: Any], frames: Int) {
    let finished = try #require(await log.wait("finished", recording: recording), "no finished event for \(recording)")
    let files = try #require(finished["files"] as? [String])
    #expect(!files.isEmpty)
    var total = 0
    for file in files {
        let segment = try #require(log.events("segment", recording: recording).first { $0["file"] as? String == file },
                                   "no segment event for \(file)")
        let frames = try decodedFrames(folder + "/" + file)
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
