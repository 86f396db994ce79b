import Foundation
import Testing
@testable import CaptureKit

/// Pauses and resumes of a recording whose video comes from a shared
/// encoder: a recording that starts paused makes no file until it resumes,
/// an event's own file is finished when the event ends, requests keep their
/// order while a resume waits for its keyframe, and a segment that falls
/// due in a pre-roll begins at a keyframe.
@Suite struct PausedRecordingTests {
    typealias Camera = SessionLifecycleTests.TickingCamera
    let lifecycle = SessionLifecycleTests()

    /// What a recording's delegate heard.
    final class Events: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        // @unchecked: every property is read and written under `lock`.
        private let lock = NSLock()
        private var _pauses = 0, _resumes = 0
        private var _files: [RecordedFile] = []
        private var _end: (RecordingStopReason, RecordingError?)?

        var pauses: Int { lock.withLock { _pauses } }
        var resumes: Int { lock.withLock { _resumes } }
        var files: [RecordedFile] { lock.withLock { _files } }
        var end: (reason: RecordingStopReason, error: RecordingError?)? { lock.withLock { _end } }

        func fileOutput(_ output: CaptureFileOutput, didPauseRecordingTo path: String) { lock.withLock { _pauses += 1 } }
        func fileOutput(_ output: CaptureFileOutput, didResumeRecordingTo path: String) { lock.withLock { _resumes += 1 } }
        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            lock.withLock { _files.append(file) }
        }
        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            lock.withLock { _end = (reason, error) }
        }
    }


    /// A session of one ticking camera (50 fps) and a movie output, not running yet.
    func session() -> (CaptureSession, MovieFileOutput) {
        let session = CaptureSession()
        session.addInput(CaptureInput(source: Camera()))
        let output = MovieFileOutput()
        session.addOutput(output)
        return (session, output)
    }

    func contents(_ scratch: WriterScratchDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []).sorted()
    }

    @Test func aRecordingThatStartsPausedMakesNoFileUntilItResumes() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = session()
        let path = scratch.file("armed.mp4")
        // An existing file the recording may replace: not before it resumes.
        try Data("kept".utf8).write(to: URL(fileURLWithPath: path))
        output.overwritesExistingFiles = true
        let events = Events()
        // Asked for before the session runs: paused before its first frame.
        output.startRecording(to: path, recordingDelegate: events)
        output.pauseRecording()
        try session.startRunning()
        defer { session.stopRunning() }
        #expect(output.isRecordingPaused && events.pauses == 1)
        // Frames keep coming (50 per second) while it waits.
        usleep(300_000)
        #expect(contents(scratch) == ["armed.mp4"], "\(contents(scratch))")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "kept", "replaced before any resume")
        output.resumeRecording()
        #expect(lifecycle.waitForFrames(output, 10))
        output.stopRecording()
        #expect(eventually { events.end != nil })
        let file = try #require(events.files.first)
        #expect(events.files.count == 1 && file.path == path && file.isComplete)
        #expect(try lifecycle.decodedFrames(path) == file.videoFrames)
        #expect(contents(scratch) == ["armed.mp4"], "\(contents(scratch))")
    }

    @Test func aRecordingPausedFromStartToEndLeavesNothing() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = session()
        let events = Events()
        output.startRecording(to: scratch.file("never.mp4"), recordingDelegate: events)
        output.pauseRecording()
        try session.startRunning()
        defer { session.stopRunning() }
        usleep(200_000)
        output.stopRecording()
        #expect(eventually { events.end != nil })
        #expect(events.end?.reason == .stopped && events.end?.error == nil)
        #expect(events.files.isEmpty && contents(scratch).isEmpty, "\(contents(scratch))")
    }

    /// Records an event in its own file from `template` on a running
    /// session: 10 frames or more, then a pause, which finishes the file
    /// while the recording waits for the next event.
    func recordFirstEvent(_ output: MovieFileOutput, to template: String) throws -> Events {
        output.startsNewFileOnResume = true
        let events = Events()
        output.startRecording(toTemplate: try FileNameTemplate(template), recordingDelegate: events)
        #expect(lifecycle.waitForFrames(output, 10))
        output.pauseRecording()
        #expect(eventually { events.files.count == 1 }, "the event's file stayed open after the event")
        return events
    }

    @Test func eachEventsFileIsFinishedWhenTheEventEnds() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = session()
        try session.startRunning()
        defer { session.stopRunning() }
        let events = try recordFirstEvent(output, to: scratch.file("event-%n.mp4"))
        #expect(output.isRecording && output.isRecordingPaused)
        let first = try #require(events.files.first)
        #expect(first.isComplete && first.path == scratch.file("event-1.mp4"))
        #expect(try lifecycle.decodedFrames(first.path) == first.videoFrames)
        output.resumeRecording()
        #expect(lifecycle.waitForFrames(output, first.videoFrames + 10))
        output.stopRecording()
        #expect(eventually { events.end != nil })
        #expect(events.files.map(\.path) == [scratch.file("event-1.mp4"), scratch.file("event-2.mp4")])
        for file in events.files {
            #expect(file.isComplete)
            #expect(try lifecycle.decodedFrames(file.path) == file.videoFrames, "\(file.path)")
        }
    }

    /// A resume waits for the keyframe it asks for; a pause asked for
    /// meanwhile comes after it: both take effect at that frame, the
    /// recording ends up paused, and the stretch of no length between them
    /// leaves no file (each event has its own here) and no error.
    @Test func aPauseAskedForJustAfterAResumeIsNotLost() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = session()
        try session.startRunning()
        defer { session.stopRunning() }
        let events = try recordFirstEvent(output, to: scratch.file("blip-%n.mp4"))
        #expect(events.pauses == 1)
        output.resumeRecording()
        output.pauseRecording()
        #expect(eventually { events.resumes == 1 && events.pauses == 2 }, "the pause was taken before the resume that waited for its keyframe")
        #expect(output.isRecordingPaused)
        #expect(events.files.count == 1)
        output.stopRecording()
        #expect(eventually { events.end != nil })
        #expect(events.end?.reason == .stopped && events.end?.error == nil, "\(String(describing: events.end))")
        #expect(contents(scratch) == ["blip-1.mp4"], "\(contents(scratch))")
    }

    /// A segment that falls due in the pre-roll after its last keyframe
    /// begins at the resume's keyframe: every file starts with a keyframe
    /// and holds the frames it reports.
    @Test func aSegmentDueInThePreRollBeginsAtAKeyframe() throws {
        let scratch = try WriterScratchDirectory()
        let (session, output) = session()
        output.settings.keyframeInterval = MediaTime(value: 1, timescale: 1)
        output.preRollDuration = MediaTime(value: 3, timescale: 2)
        output.segmentDuration = MediaTime(value: 6, timescale: 5)
        let events = Events()
        output.startRecording(toTemplate: try FileNameTemplate(scratch.file("seg-%n.mp4")), recordingDelegate: events)
        output.pauseRecording()
        try session.startRunning()
        defer { session.stopRunning() }
        // The ring's keyframes are 1 s apart from its first (K): resumed
        // about 1.7 s after K, it writes from K, and the segment falls due
        // at K + 1.2 s, after the keyframe at K + 1 s and before the resume.
        #expect(eventually { output.statistics.preRollDuration.seconds >= 1.7 })
        output.resumeRecording()
        #expect(eventually { events.files.count >= 1 })
        #expect(lifecycle.waitForFrames(output, output.statistics.videoFrames + 10))
        output.stopRecording()
        #expect(eventually { events.end != nil })
        #expect(events.end?.error == nil)
        #expect(events.files.count == 2)
        for file in events.files {
            let packets = try FFprobe.json(["-select_streams", "v:0", "-show_entries", "packet=flags", file.path])["packets"] as? [[String: Any]] ?? []
            #expect((packets.first?["flags"] as? String)?.hasPrefix("K") == true, "\(file.path) does not begin at a keyframe")
            #expect(try lifecycle.decodedFrames(file.path) == file.videoFrames, "\(file.path)")
            // 50 frames a second: a file's duration is its frames', none hidden past its end.
            #expect(abs(file.duration.seconds - Double(file.videoFrames) / 50) <= 0.021,
                    "\(file.path): \(file.videoFrames) frames in \(file.duration.seconds) s")
        }
        #expect(events.files.first.map { $0.duration.seconds >= 1.2 } == true)
        #expect(output.statistics.droppedBeforeKeyframe == 0, "frames of a segment that began between keyframes were lost")
    }
}
