@testable import CaptureKit
import Foundation
import Testing

/// PhotoOutput's requests and events: order, unique IDs, settings used once,
/// warmup, empty frames, flash, failures, raw photos and their description.
@Suite struct PhotoOutputTests {
    /// Records every delegate call as "event id".
    final class Recorder: PhotoCaptureDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private(set) var events: [(name: String, id: Int64)] = []
        private(set) var photos: [CapturedPhoto] = []
        private(set) var errors: [Int64: PhotoError] = [:]
        private(set) var resolved: [Int64: ResolvedPhotoSettings] = [:]
        private(set) var captureTimes: [Int64: MediaTime] = [:]
        private(set) var movies: [LivePhotoMovie] = []
        let done = DispatchSemaphore(value: 0)

        private func add(_ name: String, _ settings: ResolvedPhotoSettings) {
            lock.lock(); defer { lock.unlock() }
            events.append((name, settings.uniqueID))
            resolved[settings.uniqueID] = settings
        }

        func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings) { add("willBegin", settings) }
        func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings) { add("willCapture", settings) }
        func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings, timestamp: MediaTime) {
            add("didCapture", settings)
            lock.lock(); captureTimes[settings.uniqueID] = timestamp; lock.unlock()
        }
        func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto) {
            add("didFinishProcessing", photo.resolvedSettings)
            lock.lock(); photos.append(photo); lock.unlock()
        }
        func photoOutput(_ output: PhotoOutput, didFinishProcessingLivePhotoMovie movie: LivePhotoMovie) {
            add("didFinishMovie", movie.resolvedSettings)
            lock.lock(); movies.append(movie); lock.unlock()
        }
        func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings, error: PhotoError?) {
            add("didFinishCapture", settings)
            lock.lock(); if let error { errors[settings.uniqueID] = error }; lock.unlock()
            done.signal()
        }

        func wait(for count: Int, seconds: Double = 20) -> Bool {
            for _ in 0..<count where done.wait(timeout: .now() + seconds) == .timedOut { return false }
            return true
        }

        func names(for id: Int64) -> [String] { events.filter { $0.id == id }.map(\.name) }
    }

    /// A camera that delivers a fixed list of frames (some empty), then waits to be stopped.
    final class ScriptedSource: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.video
        let path = "scripted"
        let localizedName = "Scripted"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        let frames: [(luma: UInt8, empty: Bool)]
        let width = 16, height = 8
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: .raw(.gray8, bytesPerRow: nil), width: width, height: height,
                               frameDuration: MediaTime(value: 1, timescale: 30), fourcc: "GREY")
        }

        init(_ frames: [(luma: UInt8, empty: Bool)]) { self.frames = frames }

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            let start = MonotonicClock.nowNanoseconds()
            for (index, frame) in frames.enumerated() {
                if stop.isRaised { return .stopped }
                let bytes = [UInt8](repeating: frame.luma, count: frame.empty ? 0 : width * height)
                let storage = bytes.withUnsafeBytes { SampleStorage(copying: $0) }
                let time = MediaTime(value: start + Int64(index) * 33_000_000, timescale: MonotonicClock.timescale)
                deliver(.video(VideoSampleBuffer(storage: storage, layout: .raw(.gray8, bytesPerRow: nil), width: width, height: height,
                                                 presentationTime: time, duration: nil, sequence: UInt64(index))))
                _ = stop.wait(untilNanoseconds: MonotonicClock.nowNanoseconds() + 20_000_000)
            }
            _ = stop.wait(untilNanoseconds: Int64.max)
            return .stopped
        }
    }

    final class FakeFlash: PhotoFlashDevice {
        var fired = 0
        var extinguished = 0
        func fire() throws(PhotoError) { fired += 1 }
        func extinguish() { extinguished += 1 }
    }

    static let progress = ["willBegin", "willCapture", "didCapture", "didFinishCapture"]

    func session(_ source: any CaptureSource, _ output: PhotoOutput) -> CaptureSession {
        let session = CaptureSession()
        session.addInput(CaptureInput(source: source))
        session.addOutput(output)
        return session
    }

    @Test func eventsComeInOrderOnceEachWithTheRequestsID() throws {
        let output = PhotoOutput()
        let recorder = Recorder()
        let settings = (0..<3).map { _ in PhotoSettings(format: .png) }
        for item in settings { try output.capturePhoto(with: item, delegate: recorder) }
        let session = session(TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120), realtime: false), output)
        try session.startRunning()
        #expect(recorder.wait(for: 3))
        session.stopRunning()

        #expect(Set(settings.map(\.uniqueID)).count == 3)
        for item in settings {
            #expect(recorder.names(for: item.uniqueID) == ["willBegin", "willCapture", "didCapture", "didFinishProcessing", "didFinishCapture"])
            #expect(recorder.errors[item.uniqueID] == nil)
            let resolved = try #require(recorder.resolved[item.uniqueID])
            #expect(resolved.dimensions == PhotoDimensions(width: 160, height: 120))
            #expect(resolved.format == .png)
            #expect(!resolved.flashFired)
        }
        // Requests are served in order, each from a later frame.
        let order = recorder.events.filter { $0.name == "didFinishCapture" }.map(\.id)
        #expect(order == settings.map(\.uniqueID))
        let times = settings.compactMap { recorder.captureTimes[$0.uniqueID] }
        #expect(times.count == 3 && times[0] < times[1] && times[1] < times[2])
        let png = try #require(recorder.photos.first?.fileDataRepresentation)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    @Test func settingsAreUsedOnce() throws {
        let output = PhotoOutput()
        let recorder = Recorder()
        let settings = PhotoSettings()
        try output.capturePhoto(with: settings, delegate: recorder)
        #expect(throws: PhotoError.settingsReused(uniqueID: settings.uniqueID)) {
            try output.capturePhoto(with: settings, delegate: recorder)
        }
        let copy = PhotoSettings(from: settings)
        #expect(copy.uniqueID != settings.uniqueID)
        try output.capturePhoto(with: copy, delegate: recorder)
    }

    @Test func warmupAndEmptyFramesAreSkipped() throws {
        // Frames 0-2 warm up; 3 is empty; 4 (luma 200) becomes the photo.
        let source = ScriptedSource([(10, false), (20, false), (30, false), (0, true), (200, false), (90, false)])
        let output = PhotoOutput()
        output.warmup = .frames(3)
        let recorder = Recorder()
        let settings = PhotoSettings(format: .raw)
        try output.capturePhoto(with: settings, delegate: recorder)
        let session = session(source, output)
        try session.startRunning()
        #expect(recorder.wait(for: 1))
        session.stopRunning()
        let photo = try #require(recorder.photos.first)
        #expect(photo.sequence == 4)
        #expect(photo.fileDataRepresentation == [UInt8](repeating: 200, count: 16 * 8))
        let description = try #require(photo.rawDescription)
        #expect(description.fourcc == "GREY" && description.pixelFormat == "gray" && description.bytesPerLine == 16)
        #expect(output.framesSeen.empty == 1)
    }

    @Test func flashOnFiresForTheFrameAndAutoOnlyInTheDark() throws {
        let source = ScriptedSource(Array(repeating: (luma: UInt8(5), empty: false), count: 100))
        let output = PhotoOutput()
        let flash = FakeFlash()
        output.flashDevice = flash
        let recorder = Recorder()
        let on = PhotoSettings(flashMode: .on)
        let auto = PhotoSettings(flashMode: .auto)
        let off = PhotoSettings(flashMode: .off)
        for item in [on, auto, off] { try output.capturePhoto(with: item, delegate: recorder) }
        let session = session(source, output)
        try session.startRunning()
        #expect(recorder.wait(for: 3))
        session.stopRunning()
        #expect(recorder.resolved[on.uniqueID]?.flashFired == true)
        #expect(recorder.resolved[auto.uniqueID]?.flashFired == true)  // luma 5/255 is dark
        #expect(recorder.resolved[off.uniqueID]?.flashFired == false)
        #expect(flash.fired == 2 && flash.extinguished == 2)

        let bright = PhotoOutput()
        #expect(throws: PhotoError.self) { try bright.capturePhoto(with: PhotoSettings(flashMode: .on), delegate: recorder) }
    }

    @Test func aFailedRequestStillGetsEveryProgressEventOnce() throws {
        let output = PhotoOutput()
        output.warmup = .frames(1_000_000)
        let recorder = Recorder()
        let settings = PhotoSettings()
        let raw = PhotoSettings(format: .raw, size: PhotoDimensions(width: 8, height: 8))
        try output.capturePhoto(with: raw, delegate: recorder)
        try output.capturePhoto(with: settings, delegate: recorder)
        let session = session(ScriptedSource([(1, false)]), output)
        try session.startRunning()
        #expect(recorder.wait(for: 1))
        session.stopRunning()
        #expect(recorder.wait(for: 1))
        for item in [raw, settings] {
            #expect(recorder.names(for: item.uniqueID) == Self.progress)
            #expect(recorder.errors[item.uniqueID] != nil)
        }
        if case .unsupported = recorder.errors[raw.uniqueID] {} else { Issue.record("raw with a size: \(String(describing: recorder.errors[raw.uniqueID]))") }
        if case .captureEnded = recorder.errors[settings.uniqueID] {} else { Issue.record("stopped: \(String(describing: recorder.errors[settings.uniqueID]))") }
    }

    @Test func photosAreWrittenNewAndNeverOverAFile() throws {
        let directory = NSTemporaryDirectory() + "/photo-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let existing = directory + "/taken.jpg"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: existing))
        let output = PhotoOutput()
        let recorder = Recorder()
        let clash = PhotoSettings(format: .jpeg, outputPath: existing)
        let fresh = PhotoSettings(format: .raw, outputPath: directory + "/frame.raw")
        try output.capturePhoto(with: clash, delegate: recorder)
        try output.capturePhoto(with: fresh, delegate: recorder)
        let session = session(ScriptedSource(Array(repeating: (luma: UInt8(77), empty: false), count: 6)), output)
        try session.startRunning()
        #expect(recorder.wait(for: 2))
        session.stopRunning()
        #expect(recorder.errors[clash.uniqueID] == .outputExists(path: existing))
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep")
        #expect(recorder.names(for: clash.uniqueID) == Self.progress)
        #expect(FileManager.default.contents(atPath: directory + "/frame.raw")?.count == 16 * 8)
        let sidecar = try #require(FileManager.default.contents(atPath: directory + "/frame.raw.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: sidecar) as? [String: Any])
        #expect(object["fourcc"] as? String == "GREY")
        #expect(object["width"] as? Int == 16 && object["height"] as? Int == 8 && object["bytesPerLine"] as? Int == 16)
    }

    @Test func liveMovieHoldsThePhotosMoment() throws {
        let directory = NSTemporaryDirectory() + "/live-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = PhotoOutput()
        output.isLivePhotoCaptureEnabled = true
        output.livePhotoMovieDuration = MediaTime(value: 1, timescale: 1)
        let recorder = Recorder()
        let settings = PhotoSettings(format: .jpeg, outputPath: directory + "/live.jpg", livePhotoMovieFilePath: directory + "/live.mov")
        try output.capturePhoto(with: settings, delegate: recorder)
        let session = session(TestPatternSource(request: CaptureVideoRequest(width: 160, height: 120)), output)
        try session.startRunning()
        #expect(recorder.wait(for: 1))
        session.stopRunning()
        #expect(recorder.errors.isEmpty)
        #expect(recorder.names(for: settings.uniqueID) == ["willBegin", "willCapture", "didCapture", "didFinishProcessing", "didFinishMovie", "didFinishCapture"])
        let movie = try #require(recorder.movies.first)
        #expect(abs(movie.photoDisplayTime.seconds - 0.5) < 0.05)
        #expect(movie.duration.seconds > 0.9 && movie.duration.seconds < 1.2)
        #expect(movie.bytes > 0)
    }
}
