import Foundation
import Testing
@testable import CaptureKit

/// Markers placed on a running recording of the test-pattern camera: where
/// they land (the file's media time, the pause point while paused, the file
/// being written with segments), and the chapters the finished files carry,
/// read back by ffprobe, mkvextract and `MediaInfo`.
@Suite struct RecordingMarkerTests {
    /// The camera's frame interval: a chapter starts within one of its marker.
    static let frameInterval = 1.0 / 30

    /// What a recording's delegate heard.
    final class Events: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        // @unchecked: every property is read and written under `lock`.
        private let lock = NSLock()
        private var _files: [RecordedFile] = []
        private var _end: RecordingStopReason?

        var files: [RecordedFile] { lock.withLock { _files } }
        var end: RecordingStopReason? { lock.withLock { _end } }

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            lock.withLock { _files.append(file) }
        }
        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            lock.withLock { _end = reason }
        }
    }

    /// A running session of the test-pattern camera (and the test tone,
    /// with `tone`) and a movie output on it.
    static func running(tone: Bool = false, _ configure: (MovieFileOutput) -> Void = { _ in }) throws -> (CaptureSession, MovieFileOutput) {
        let session = CaptureSession()
        session.addInput(try CaptureInput(camera: "test-pattern", request: CaptureVideoRequest(width: 160, height: 120)))
        if tone { session.addInput(try CaptureInput(microphone: "test-tone")) }
        let output = MovieFileOutput()
        configure(output)
        session.addOutput(output)
        try session.startRunning()
        return (session, output)
    }

    /// Waits until the recording holds at least `seconds` of media.
    static func recorded(_ output: CaptureFileOutput, atLeast seconds: Double) -> Bool {
        eventually { output.recordedDuration.seconds >= seconds }
    }

    /// Simple chapters as mkvextract (mkvtoolnix, not libavformat) reads them: start in seconds and title.
    static func mkvextractChapters(_ path: String, scratch: WriterScratchDirectory) throws -> [(start: Double, title: String)] {
        let out = scratch.file("chapters-\(UUID().uuidString).txt")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["mkvextract", path, "chapters", "--simple", out]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        var starts = [String: Double](), titles = [String: String]()
        for line in try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals]), value = String(line[line.index(after: equals)...])
            if key.hasSuffix("NAME") {
                titles[String(key.dropLast(4))] = value
            } else {
                // HH:MM:SS.nnn
                let fields = value.split(separator: ":").compactMap { Double($0) }
                if fields.count == 3 { starts[key] = fields[0] * 3600 + fields[1] * 60 + fields[2] }
            }
        }
        return starts.keys.sorted().map { (starts[$0]!, titles[$0] ?? "") }
    }

    /// Checks that the file at `path` carries exactly `markers` as chapters:
    /// titles exact, each starting within one frame interval of its
    /// marker's time and ending where the next starts, the last at the end.
    static func expectChapters(_ path: String, are markers: [RecordingMarker], duration: MediaTime,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let chapters = try ChapterWriterTests.probedChapters(path)
        #expect(chapters.map(\.title) == markers.map(\.title), sourceLocation: sourceLocation)
        guard chapters.count == markers.count else { return }
        for (chapter, marker) in zip(chapters, markers) {
            #expect(abs(chapter.start - marker.time.seconds) <= frameInterval, "\(chapter) \(marker)", sourceLocation: sourceLocation)
        }
        #expect(zip(chapters, chapters.dropFirst()).allSatisfy { $0.end == $1.start }, "\(chapters)", sourceLocation: sourceLocation)
        if let last = chapters.last {
            #expect(abs(last.end - duration.seconds) <= frameInterval, "\(last) ends at \(duration.seconds)", sourceLocation: sourceLocation)
        }
        let info = try MediaInfo.read(path: path)
        #expect(info.chapters.map(\.title) == markers.map(\.title), sourceLocation: sourceLocation)
        #expect(zip(info.chapters, markers).allSatisfy { abs($0.start.seconds - $1.time.seconds) <= frameInterval },
                "\(info.chapters)", sourceLocation: sourceLocation)
    }

    /// The file name's variant, as `capctl record` would write it.
    static func configure(_ output: MovieFileOutput, for name: String) {
        if name.hasPrefix("no-fragments") { output.settings.fragmentInterval = .invalid }
        if name.hasPrefix("faststart") {
            output.settings.fragmentInterval = .invalid
            output.settings.optimizeForNetworkUse = true
        }
    }

    /// A marker while recording, one while paused (at the pause point),
    /// one after the resume: three chapters, in every container with
    /// chapters (with sound, whose encoders' priming must not move them).
    @Test(arguments: ["default.mp4", "default.mov", "no-fragments.mp4", "faststart.mov", "clip.mkv", "clip.webm"])
    func markersBecomeChaptersAtTheirMediaTime(name: String) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file(name)
        let (session, output) = try Self.running(tone: true) { Self.configure($0, for: name) }
        defer { session.stopRunning() }
        let events = Events()
        output.startRecording(to: path, recordingDelegate: events)
        #expect(Self.recorded(output, atLeast: 0.4))
        let first = try output.addMarker(title: "the door opened")
        #expect(Self.recorded(output, atLeast: first.time.seconds + 0.4))
        output.pauseRecording()
        #expect(eventually { output.isRecordingPaused })
        // Frames keep coming while paused; the recording's time stays at the pause point.
        usleep(300_000)
        let pausePoint = output.recordedDuration
        let paused = try output.addMarker(title: "während der Pause")
        output.resumeRecording()
        #expect(eventually { !output.isRecordingPaused })
        #expect(Self.recorded(output, atLeast: pausePoint.seconds + 0.4))
        let third = try output.addMarker(title: "third")
        #expect(Self.recorded(output, atLeast: third.time.seconds + 0.3))
        output.stopRecording()
        #expect(eventually { events.end != nil })

        // Where they landed: the file's own timeline, one file, the pause left out.
        #expect(first.time.seconds >= 0.4 && first.time.seconds < 1.5, "\(first.time.seconds)")
        #expect(paused.time == pausePoint)
        #expect(third.time > paused.time && paused.time > first.time)
        for marker in [first, paused, third] {
            #expect(marker.path == path && marker.fileIndex == 1 && marker.recordingTime == marker.time)
        }
        let file = try #require(events.files.first)
        #expect(events.files.count == 1 && file.isComplete)
        #expect(file.markers == [first, paused, third])
        try Self.expectChapters(path, are: [first, paused, third], duration: file.duration)
        if name.hasSuffix(".mkv") || name.hasSuffix(".webm") {
            let extracted = try Self.mkvextractChapters(path, scratch: scratch)
            #expect(extracted.map(\.title) == ["the door opened", "während der Pause", "third"])
            #expect(zip(extracted, [first, paused, third]).allSatisfy { abs($0.start - $1.time.seconds) <= Self.frameInterval }, "\(extracted)")
        }
    }

    /// With segments, a marker goes into the file being written, at its time in that file.
    @Test(arguments: ["seg-%n.mp4", "seg-%n.mkv"])
    func aMarkerInTheSecondSegmentIsAChapterOfTheSecondFile(template: String) throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.running { $0.segmentDuration = MediaTime(value: 2, timescale: 1) }
        defer { session.stopRunning() }
        let events = Events()
        output.startRecording(toTemplate: try FileNameTemplate(scratch.file(template)), recordingDelegate: events)
        #expect(Self.recorded(output, atLeast: 0.5))
        let first = try output.addMarker(title: "in the first file")
        #expect(Self.recorded(output, atLeast: 2.6))
        let second = try output.addMarker(title: "in the second file")
        #expect(Self.recorded(output, atLeast: 3.0))
        output.stopRecording()
        #expect(eventually { events.end != nil })

        let files = events.files.sorted { $0.index < $1.index }
        try #require(files.count == 2, "\(files.map(\.path))")
        #expect(first.fileIndex == 1 && first.path == files[0].path && first.time == first.recordingTime)
        #expect(second.fileIndex == 2 && second.path == files[1].path)
        // Its time in the second file: the recording's time less the first file.
        #expect(abs(second.time.seconds - (second.recordingTime.seconds - files[0].duration.seconds)) < 0.001,
                "\(second.time.seconds) \(second.recordingTime.seconds) \(files[0].duration.seconds)")
        #expect(second.time.seconds > 0.4 && second.time.seconds < 1.5, "\(second.time.seconds)")
        #expect(files[0].markers == [first] && files[1].markers == [second])
        try Self.expectChapters(files[0].path, are: [first], duration: files[0].duration)
        try Self.expectChapters(files[1].path, are: [second], duration: files[1].duration)
    }

    /// With a file per event, a marker placed while paused (no file open)
    /// is a chapter at the start of the file the resume opens.
    @Test func aMarkerWhileNoFileIsOpenStartsTheNextFile() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.running { $0.startsNewFileOnResume = true }
        defer { session.stopRunning() }
        let events = Events()
        output.startRecording(toTemplate: try FileNameTemplate(scratch.file("event-%n.mkv")), recordingDelegate: events)
        #expect(Self.recorded(output, atLeast: 0.5))
        output.pauseRecording()
        #expect(eventually { events.files.count == 1 })
        let marker = try output.addMarker(title: "before the next event")
        #expect(marker.fileIndex == 2 && marker.time == .zero && marker.path == scratch.file("event-2.mkv"))
        #expect(marker.recordingTime == events.files[0].duration)
        output.resumeRecording()
        #expect(Self.recorded(output, atLeast: marker.recordingTime.seconds + 0.5))
        output.stopRecording()
        #expect(eventually { events.end != nil })
        try #require(events.files.count == 2)
        let second = events.files[1]
        #expect(events.files[0].markers.isEmpty && second.markers == [marker])
        try Self.expectChapters(second.path, are: [marker], duration: second.duration)
        #expect(try ChapterWriterTests.probedChapters(events.files[0].path).isEmpty)
    }

    /// MPEG-TS has no chapters: the markers are in the listing only.
    @Test func anMPEGTSFileListsItsMarkersWithoutChapters() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.running()
        defer { session.stopRunning() }
        let events = Events()
        output.startRecording(to: scratch.file("clip.ts"), recordingDelegate: events)
        #expect(Self.recorded(output, atLeast: 0.3))
        let marker = try output.addMarker(title: "listed")
        #expect(Self.recorded(output, atLeast: marker.time.seconds + 0.3))
        output.stopRecording()
        #expect(eventually { events.end != nil })
        #expect(events.files.first?.markers == [marker])
        #expect(try ChapterWriterTests.probedChapters(scratch.file("clip.ts")).isEmpty)
    }

    @Test func markersAreRefusedWithoutARecordingOrWithABadTitle() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = try Self.running()
        defer { session.stopRunning() }
        #expect(throws: RecordingMarkerError.notRecording) { try output.addMarker(title: "nothing runs") }
        let events = Events()
        output.startRecording(to: scratch.file("titles.mkv"), recordingDelegate: events)
        #expect(Self.recorded(output, atLeast: 0.2))
        #expect(throws: RecordingMarkerError.emptyTitle) { try output.addMarker(title: "") }
        #expect(throws: RecordingMarkerError.emptyTitle) { try output.addMarker(title: " \n") }
        #expect(throws: RecordingMarkerError.titleTooLong(bytes: 256)) { try output.addMarker(title: String(repeating: "a", count: 256)) }
        #expect(throws: RecordingMarkerError.titleHasNUL) { try output.addMarker(title: "a\u{0}b") }
        let longest = try output.addMarker(title: String(repeating: "ü", count: 127) + "a")
        output.stopRecording()
        #expect(throws: RecordingMarkerError.notRecording) { try output.addMarker(title: "too late") }
        #expect(eventually { events.end != nil })
        #expect(events.files.first?.markers == [longest])
        #expect(try ChapterWriterTests.probedChapters(scratch.file("titles.mkv")).map(\.title) == [longest.title])
    }

    @Test func aRecorderForwardsMarkersToItsFileAndRefusesThemWithoutOne() throws {
        let scratch = try WriterScratchDirectory()
        let streamsOnly = try CaptureRecorder(CaptureRecorderConfiguration(destination: nil))
        #expect(throws: RecordingMarkerError.noFile) { try streamsOnly.addMarker(title: "no file") }

        let heard = CaptureRecorderTests.Heard()
        let recorder = try CaptureRecorder(CaptureRecorderConfiguration(destination: scratch.file("recorder.mp4")), delegate: heard)
        let session = try CaptureRecorderTests.session()
        try recorder.start(on: session)
        let output = try #require(recorder.fileOutput)
        #expect(Self.recorded(output, atLeast: 0.3))
        let marker = try recorder.addMarker(title: "from the recorder")
        #expect(Self.recorded(output, atLeast: marker.time.seconds + 0.3))
        recorder.stop()
        #expect(recorder.waitUntilEnded(timeout: 20))
        recorder.finish()
        session.stopRunning()
        let file = try #require(heard.files.first)
        #expect(file.markers == [marker])
        try Self.expectChapters(file.path, are: [marker], duration: file.duration)
    }
}
