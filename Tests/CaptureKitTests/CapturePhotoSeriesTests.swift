@testable import CaptureKit
import Foundation
import Testing

/// CapturePhotoSeries: its settings checked in one place with the setting
/// named, its files named and checked before any photo, bursts from later
/// frames, time-lapses spaced from the first photo, and its end when it is
/// stopped or capture ends, without waiting out an interval.
@Suite struct CapturePhotoSeriesTests {
    private func folder() throws -> String {
        let path = NSTemporaryDirectory() + "/series-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func pattern() -> CaptureInput {
        CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120, framesPerSecond: 30), realtime: true))
    }

    private static func settings(_ destination: String?, _ change: (inout CapturePhotoSeries.Settings) -> Void = { _ in }) -> CapturePhotoSeries.Settings {
        var settings = CapturePhotoSeries.Settings(destination: destination)
        change(&settings)
        return settings
    }

    @Test(arguments: [
        (settings("x.jpg") { $0.count = 0 }, CapturePhotoSeries.Settings.Setting.count, "--count 0 is out of range"),
        (settings("x.jpg") { $0.count = 101; $0.maximumCount = 100 }, .count, "--count 101 is out of range; use 1 to 100 photos"),
        (settings("x.jpg") { $0.interval = MediaTime(value: 1, timescale: 1) }, .interval, "--interval needs --count 2 or more"),
        (settings("x.png") { $0.quality = 50 }, .quality, "--quality applies to JPEG photos, not png"),
        (settings("x.jpg") { $0.quality = 101 }, .quality, "--quality 101 is out of range"),
        (settings("x.gif"), .format, "cannot tell the photo format from 'x.gif'; end it in .jpg, .png or .raw, or give --format"),
        (settings("x-%q.jpg"), .destination, "OUT 'x-%q.jpg'"),
        (settings(nil) { $0.count = 2 }, .destination, "2 photos need OUT"),
        (settings("x-%n.jpg") { $0.count = 11; $0.interval = MediaTime(value: 61, timescale: 1); $0.maximumDuration = MediaTime(value: 600, timescale: 1) },
         .count, "--count 11 at --interval 61.0 s takes longer than 600 s"),
        (settings("x.jpg") { $0.livePhotoMovieFileType = .matroska }, .livePhotoMovieFileType, "--live-format mkv is not"),
    ])
    func settingsThatDoNotGoTogetherNameTheSetting(settings: CapturePhotoSeries.Settings, setting: CapturePhotoSeries.Settings.Setting, message: String) {
        let names: [CapturePhotoSeries.Settings.Setting: String] = [.destination: "OUT", .format: "--format", .quality: "--quality", .count: "--count",
                                                            .interval: "--interval", .flashMode: "--flash", .livePhotoMovieFileType: "--live-format"]
        #expect(throws: CapturePhotoSeries.SettingsError.self) { try settings.validate() }
        do {
            try settings.validate()
        } catch {
            #expect(error.setting == setting)
            let text = error.message { names[$0]! }
            #expect(text.hasPrefix(message) || text.contains(message), "\(text)")
            // Named otherwise by another interface, with the same words.
            #expect(error.description.contains(setting.rawValue) || setting == .format, "\(error.description)")
        }
    }

    @Test func aValidSeriesPasses() throws {
        try Self.settings("shot-%3n.jpg") { $0.count = 5; $0.interval = MediaTime(value: 2, timescale: 1); $0.quality = 80 }.validate()
        try Self.settings(nil).validate()
        #expect(Self.settings(nil).resolvedFormat == .jpeg)
        #expect(Self.settings("a.RAW").resolvedFormat == .raw)
    }

    @Test func filesAreCheckedBeforeAnyPhoto() throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("keep".utf8).write(to: URL(fileURLWithPath: directory + "/b-2.jpg"))
        let series = try CapturePhotoSeries(Self.settings(directory + "/b.jpg") { $0.count = 3 }, output: PhotoOutput())
        #expect(series.plannedFiles == [directory + "/b.jpg", directory + "/b-2.jpg", directory + "/b-3.jpg"])
        #expect(throws: PhotoError.outputExists(path: directory + "/b-2.jpg")) { try series.checkDestination() }
        let raw = try CapturePhotoSeries(Self.settings(directory + "/r-%n.raw") { $0.count = 2 }, output: PhotoOutput())
        #expect(raw.plannedFiles == [directory + "/r-1.raw", directory + "/r-1.raw.json", directory + "/r-2.raw", directory + "/r-2.raw.json"])
        // A photo and its live movie with one name.
        #expect(throws: CapturePhotoSeries.SettingsError(.destination, .writtenTwice(directory + "/a.mov"))) {
            try CapturePhotoSeries(Self.settings(directory + "/a.mov") { $0.format = .jpeg; $0.livePhotoMovieFileType = .quickTimeMovie }, output: PhotoOutput())
        }
        // A width that makes a name no file system takes: refused, naming only its start.
        let long = try CapturePhotoSeries(Self.settings(directory + "/w-%150n%150c.jpg"), output: PhotoOutput())
        do {
            try long.checkDestination()
            Issue.record("a 306-byte name was taken")
        } catch {
            guard case .cannotWrite(let path, let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("306 bytes") && reason.contains("at most 255"), "\(reason)")
            #expect(path.count <= 101, "\(path)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["b-2.jpg"])
    }

    @Test func aBurstTakesLaterFramesIntoNumberedFiles() throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = PhotoOutput()
        let events = PhotoOutputTests.Recorder()
        let series = try CapturePhotoSeries(Self.settings(directory + "/b.png") { $0.count = 3 }, output: output, delegate: events)
        try series.checkDestination()
        try series.start()
        let session = CaptureSession()
        session.addInput(pattern())
        session.addOutput(output)
        try session.startRunning()
        let result = series.waitUntilFinished()
        session.stopRunning()
        #expect(result.isComplete && result.failures.isEmpty && !result.isStopped)
        #expect(result.photos.map(\.path) == [directory + "/b.png", directory + "/b-2.png", directory + "/b-3.png"])
        let sequences = result.photos.map(\.sequence)
        #expect(sequences == sequences.sorted() && Set(sequences).count == 3)
        // The delegate heard every call of every photo.
        #expect(events.photos.count == 3)
        #expect(events.events.filter { $0.name == "didFinishCapture" }.count == 3)
        for photo in result.photos {
            #expect(FileManager.default.contents(atPath: photo.path!)?.starts(with: [0x89, 0x50, 0x4E, 0x47]) == true)
        }
    }

    @Test func aTimeLapseIsSpacedFromTheFirstPhoto() async throws {
        let output = PhotoOutput()
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let interval = MediaTime(value: 400, timescale: 1000)
        let series = try CapturePhotoSeries(Self.settings(directory + "/t-%n.jpg") { $0.count = 3; $0.interval = interval }, output: output)
        let session = CaptureSession()
        session.addInput(pattern())
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        try series.start()
        let result = await series.finished()
        #expect(result.isComplete, "\(result.failures)")
        let times = result.photos.map(\.timestamp.seconds)
        #expect(times.count == 3)
        // Each photo is the first frame at or after its time: never early.
        for index in 1..<times.count {
            #expect(times[index] - times[0] >= Double(index) * interval.seconds - 0.001, "\(times)")
        }
    }

    @Test func stoppingEndsATimeLapseWithoutWaitingOutItsInterval() throws {
        let output = PhotoOutput()
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let events = PhotoOutputTests.Recorder()
        let series = try CapturePhotoSeries(Self.settings(directory + "/s-%n.jpg") { $0.count = 3; $0.interval = MediaTime(value: 60, timescale: 1) },
                                            output: output, delegate: events)
        let session = CaptureSession()
        session.addInput(pattern())
        session.addOutput(output)
        try series.start()
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(events.wait(for: 1))
        series.stop()
        let ended = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { _ = series.waitUntilFinished(); ended.signal() }
        // Far less than the interval: the series does not wait for photo 2's time.
        #expect(ended.wait(timeout: .now() + 30) == .success)
        let result = series.waitUntilFinished()
        #expect(result.isStopped && result.photos.count == 1 && !result.isComplete)
    }

    @Test func captureThatEndsEndsTheSeries() throws {
        let output = PhotoOutput()
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let events = PhotoOutputTests.Recorder()
        let series = try CapturePhotoSeries(Self.settings(directory + "/e-%n.jpg") { $0.count = 3; $0.interval = MediaTime(value: 60, timescale: 1) },
                                            output: output, delegate: events)
        let session = CaptureSession()
        session.addInput(pattern())
        session.addOutput(output)
        try session.startRunning()
        try series.start()
        #expect(events.wait(for: 1))
        session.stopRunning()
        let ended = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { _ = series.waitUntilFinished(); ended.signal() }
        #expect(ended.wait(timeout: .now() + 30) == .success)
        let result = series.waitUntilFinished()
        #expect(result.captureEnded != nil && result.photos.count == 1 && !result.isStopped)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["e-1.jpg"])
    }

    /// A burst asked for while the camera already runs: every photo once,
    /// however soon the first are done (again and again, to meet the race).
    @Test func aBurstOnARunningCameraTakesEachPhotoOnce() throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = PhotoOutput()
        let session = CaptureSession()
        session.addInput(CaptureInput(source: TestPatternSource(request: CaptureVideoRequest(width: 64, height: 48, framesPerSecond: 120), realtime: true)))
        session.addOutput(output)
        try session.startRunning()
        defer { session.stopRunning() }
        for round in 1...4 {
            let series = try CapturePhotoSeries(Self.settings(directory + "/r\(round)-%n.png") { $0.count = 6 }, output: output)
            try series.start()
            let result = series.waitUntilFinished()
            #expect(result.isComplete && result.failures.isEmpty, "round \(round): \(result.failures)")
            #expect(result.photos.compactMap(\.path) == (1...6).map { directory + "/r\(round)-\($0).png" })
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == 24)
    }

    @Test func aSeriesStoppedOrEndedBeforeItStartsAsksForNothing() throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = PhotoOutput()
        let stopped = try CapturePhotoSeries(Self.settings(directory + "/s-%n.jpg") { $0.count = 2 }, output: output)
        stopped.stop()
        try stopped.start()
        let result = stopped.waitUntilFinished()
        #expect(result.isStopped && result.photos.isEmpty && result.failures.isEmpty)

        // A session that ran and stopped: the photo is refused, not kept for a restart.
        let session = CaptureSession()
        session.addInput(pattern())
        session.addOutput(output)
        try session.startRunning()
        session.stopRunning()
        let late = try CapturePhotoSeries(Self.settings(directory + "/l.jpg"), output: output)
        #expect(throws: PhotoError.self) { try late.start() }
        let ended = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { _ = late.waitUntilFinished(); ended.signal() }
        #expect(ended.wait(timeout: .now() + 30) == .success)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
