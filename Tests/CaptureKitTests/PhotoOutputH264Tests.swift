@testable import CaptureKit
import Foundation
import Testing

/// Photos from an H.264 camera: a frame becomes a photo only from the first
/// keyframe on, is decoded from its keyframe through itself (the picture is
/// that frame's, not the keyframe's), a raw photo is the access unit as it
/// came, and a live photo's movie starts at a keyframe.
@Suite struct PhotoOutputH264Tests {
    typealias Recorder = PhotoOutputTests.Recorder

    static let gop = 10
    static let frameCount = 60

    /// 60 numbered 320x240 frames at 30 fps as Annex B H.264, a keyframe
    /// every 10 with its parameter sets in band, as a camera sends them; made once.
    static let stream: (format: CaptureVideoFormat, frames: [VideoSampleBuffer])? = {
        guard let scratch = try? WriterScratchDirectory() else { return nil }
        let movie = scratch.file("numbered.mp4"), raw = scratch.file("numbered.h264")
        guard (try? FileCaptureSourceTests.written(movie, codec: .h264, count: frameCount, keyframes: gop)) != nil else { return nil }
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-v", "error", "-nostdin", "-i", movie, "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", raw]
        guard (try? ffmpeg.run()) != nil else { return nil }
        ffmpeg.waitUntilExit()
        let source = FileCaptureSource(path: raw, realtime: false)
        guard ffmpeg.terminationStatus == 0, (try? source.open()) != nil, let format = source.videoFormat else { return nil }
        defer { source.close() }
        var frames: [VideoSampleBuffer] = []
        captureSamples(source) { if let video = $0.videoSample { frames.append(video.detached()) } }
        return (format, frames)
    }()

    /// A camera sending `frames` from index `start` on, 40 ms apart in capture
    /// time (25 fps, exact in nanoseconds; each with its index as sequence),
    /// then waiting to be stopped.
    final class H264Camera: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.video
        let path = "h264-camera"
        let localizedName = "H.264 camera"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        let videoFormat: CaptureVideoFormat?
        let frames: [VideoSampleBuffer]
        let start: Int
        /// Indices delivered empty (a frame the driver lost).
        let empty: Set<Int>

        init(_ stream: (format: CaptureVideoFormat, frames: [VideoSampleBuffer]), from start: Int = 0, empty: Set<Int> = []) {
            videoFormat = stream.format
            frames = stream.frames
            self.start = start
            self.empty = empty
        }

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            let origin = MonotonicClock.nowNanoseconds()
            for index in start..<frames.count {
                if stop.isRaised { return .stopped }
                let frame = frames[index]
                let storage = empty.contains(index) ? SampleStorage(copying: UnsafeRawBufferPointer(start: nil, count: 0)) : frame.storage
                deliver(.video(VideoSampleBuffer(
                    storage: storage, layout: frame.layout, width: frame.width, height: frame.height,
                    presentationTime: MediaTime(value: origin + Int64(index - start) * 40_000_000, timescale: MonotonicClock.timescale),
                    duration: MediaTime(value: 1, timescale: 25), sequence: UInt64(index), isKeyframe: frame.isKeyframe)))
                // Paced a little, so that a live photo's wait sees frames arrive.
                _ = stop.wait(untilNanoseconds: MonotonicClock.nowNanoseconds() + 2_000_000)
            }
            _ = stop.wait(untilNanoseconds: Int64.max)
            return .stopped
        }
    }

    /// The number a photo's picture shows, and its size, read back through libavformat.
    static func picture(_ bytes: [UInt8], suffix: String) throws -> (number: Int, width: Int, height: Int) {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("photo" + suffix)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let output = try PlayerItemVideoOutput(item: PlayerItem(path: path), pixelFormat: .gray8)
        let image = try #require(try output.copyPixelBuffer(forItemTime: .zero))
        return (NumberedFrames.read(image), image.width, image.height)
    }

    func run(_ camera: H264Camera, _ output: PhotoOutput, requests: [PhotoSettings], recorder: Recorder) throws {
        for settings in requests { try output.capturePhoto(with: settings, delegate: recorder) }
        let session = CaptureSession()
        session.addInput(CaptureInput(source: camera))
        session.addOutput(output)
        try session.startRunning()
        #expect(recorder.wait(for: requests.count))
        session.stopRunning()
    }

    @Test func aPhotoWaitsForTheFirstKeyframeAndIsDecodedFromIt() throws {
        let stream = try #require(Self.stream)
        #expect(stream.frames.count == Self.frameCount)
        #expect(stream.frames.indices.filter { stream.frames[$0].isKeyframe } == [0, 10, 20, 30, 40, 50])
        // Capture joins in the middle of the first GOP: frames 3 to 9 cannot be decoded.
        let output = PhotoOutput()
        let recorder = Recorder()
        let requests = [PhotoSettings(format: .jpeg), PhotoSettings(format: .png), PhotoSettings(format: .jpeg, quality: 80)]
        try run(H264Camera(stream, from: 3), output, requests: requests, recorder: recorder)

        #expect(recorder.errors.isEmpty, "\(recorder.errors)")
        for settings in requests {
            #expect(recorder.names(for: settings.uniqueID) == ["willBegin", "willCapture", "didCapture", "didFinishProcessing", "didFinishCapture"])
            let resolved = try #require(recorder.resolved[settings.uniqueID])
            #expect(!resolved.isPassthrough)
            #expect(resolved.sourceFourCC == "H264")
        }
        // The first photo is the first keyframe's; the next ones later frames,
        // each decoded from its keyframe: the picture is the frame's own.
        let photos = requests.compactMap { settings in recorder.photos.first { $0.resolvedSettings.uniqueID == settings.uniqueID } }
        #expect(photos.count == 3)
        #expect(photos.first?.sequence == 10)
        #expect(photos.map(\.sequence) == photos.map(\.sequence).sorted() && Set(photos.map(\.sequence)).count == 3)
        for (photo, suffix) in zip(photos, [".jpg", ".png", ".jpg"]) {
            let picture = try Self.picture(photo.fileDataRepresentation, suffix: suffix)
            #expect(picture.number == Int(photo.sequence), "photo of frame \(photo.sequence)")
            #expect(picture.width == 320 && picture.height == 240)
            #expect(photo.dimensions == PhotoDimensions(width: 320, height: 240))
        }
        #expect(photos.first?.fileDataRepresentation.starts(with: [0xFF, 0xD8]) == true)
    }

    @Test func aFrameInTheMiddleOfAGOPShowsItsOwnPicture() throws {
        let stream = try #require(Self.stream)
        let output = PhotoOutput()
        output.warmup = .frames(16)
        let recorder = Recorder()
        let settings = PhotoSettings(format: .png)
        try run(H264Camera(stream), output, requests: [settings], recorder: recorder)
        let photo = try #require(recorder.photos.first)
        #expect(photo.sequence == 16)
        #expect(try Self.picture(photo.fileDataRepresentation, suffix: ".png").number == 16)
    }

    @Test func aRawPhotoIsTheAccessUnitAsItCame() throws {
        let stream = try #require(Self.stream)
        let output = PhotoOutput()
        output.warmup = .frames(12)
        let recorder = Recorder()
        let settings = PhotoSettings(format: .raw)
        try run(H264Camera(stream, from: 5), output, requests: [settings], recorder: recorder)
        let photo = try #require(recorder.photos.first)
        // Frames 5 to 9 count for the warmup but cannot be photos; the 13th frame is 17.
        #expect(photo.sequence == 17)
        #expect(photo.fileDataRepresentation == Array(stream.frames[17].bytes))
        #expect(recorder.resolved[settings.uniqueID]?.isPassthrough == true)
        let description = try #require(photo.rawDescription)
        #expect(description.pixelFormat == "h264" && description.fourcc == "H264")
        #expect(description.bytesPerLine == 0 && !description.keyframe)
        #expect(description.byteCount == stream.frames[17].bytes.count)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(PhotoOutput.json(description).utf8)) as? [String: Any])
        #expect(json["keyframe"] as? Bool == false && json["pixelFormat"] as? String == "h264")
    }

    /// A lost frame breaks the chain of references: frames after it wait for the next keyframe.
    @Test func afterALostFrameThePhotoWaitsForTheNextKeyframe() throws {
        let stream = try #require(Self.stream)
        let output = PhotoOutput()
        output.warmup = .frames(3)
        let recorder = Recorder()
        let settings = PhotoSettings(format: .jpeg)
        try run(H264Camera(stream, empty: [2]), output, requests: [settings], recorder: recorder)
        let photo = try #require(recorder.photos.first)
        #expect(photo.sequence == 10)
        #expect(try Self.picture(photo.fileDataRepresentation, suffix: ".jpg").number == 10)
        #expect(output.framesSeen.empty == 1)
    }

    /// A run between keyframes longer than the output keeps: its later frames wait for the next keyframe.
    @Test func aRunLongerThanTheLimitWaitsForTheNextKeyframe() throws {
        let stream = try #require(Self.stream)
        let output = PhotoOutput()
        output.keyframeRunByteLimit = stream.frames[0...2].reduce(0) { $0 + $1.bytes.count }
        output.warmup = .frames(4)
        let recorder = Recorder()
        let settings = PhotoSettings(format: .png)
        try run(H264Camera(stream), output, requests: [settings], recorder: recorder)
        let photo = try #require(recorder.photos.first)
        #expect(photo.sequence == 10)
        #expect(try Self.picture(photo.fileDataRepresentation, suffix: ".png").number == 10)
    }

    @Test func aLivePhotoMovieStartsAtAKeyframeAndHoldsThePhotosMoment() throws {
        let stream = try #require(Self.stream)
        let scratch = try WriterScratchDirectory()
        let output = PhotoOutput()
        output.isLivePhotoCaptureEnabled = true
        output.livePhotoMovieDuration = MediaTime(value: 4, timescale: 10)
        let recorder = Recorder()
        let settings = PhotoSettings(format: .jpeg, outputPath: scratch.file("live.jpg"), livePhotoMovieFilePath: scratch.file("live.mov"))
        try run(H264Camera(stream, from: 4), output, requests: [settings], recorder: recorder)
        #expect(recorder.errors.isEmpty, "\(recorder.errors)")
        #expect(recorder.names(for: settings.uniqueID) == ["willBegin", "willCapture", "didCapture", "didFinishProcessing", "didFinishMovie", "didFinishCapture"])
        // Half the movie (0.2 s, 5 frames) after the first keyframe (10): frame 15,
        // in the middle of its GOP, in a movie of frames 10 to 20.
        let photo = try #require(recorder.photos.first)
        #expect(photo.sequence == 15)
        let movie = try #require(recorder.movies.first)
        #expect(movie.frames == 11)
        #expect(abs(movie.photoDisplayTime.seconds - 0.2) < 0.001)
        #expect(abs(movie.duration.seconds - 0.44) < 0.001)
        #expect(try FFprobe.frames(scratch.file("live.mov")).count == 11)
        // The movie's first picture is frame 10's; the photo's moment shows frame 15, as the photo does.
        let video = try PlayerItemVideoOutput(item: PlayerItem(path: scratch.file("live.mov")), pixelFormat: .gray8)
        let first = try #require(try video.copyPixelBuffer(forItemTime: .zero))
        #expect(NumberedFrames.read(first) == 10)
        let moment = try #require(try video.copyPixelBuffer(forItemTime: movie.photoDisplayTime))
        #expect(NumberedFrames.read(moment) == 15)
        #expect(try Self.picture(photo.fileDataRepresentation, suffix: ".jpg").number == 15)
    }
}

/// What the photo output keeps of a stream: the run since the last keyframe, and the live ring.
@Suite struct PhotoFrameRunTests {
    static func frame(_ index: Int, key: Bool, bytes: Int = 100) -> VideoSampleBuffer {
        let data = [UInt8](repeating: UInt8(index & 0xFF), count: bytes)
        return VideoSampleBuffer(storage: data.withUnsafeBytes { SampleStorage(copying: $0) }, layout: .compressed(codecName: "h264"),
                                 width: 16, height: 16, presentationTime: MediaTime(value: Int64(index) * 100_000_000, timescale: MonotonicClock.timescale),
                                 duration: nil, sequence: UInt64(index), isKeyframe: key)
    }

    /// Whether each frame, taken in turn, may become a photo.
    static func feed(_ run: inout PhotoFrameRun, _ frames: [VideoSampleBuffer]) -> [Bool] {
        frames.map { run.take($0) }
    }

    @Test func framesBeforeAKeyframeAreNotEligibleAndAPhotoCarriesItsReferences() {
        var run = PhotoFrameRun(layout: .compressed(codecName: "h264"), byteLimit: 10_000)
        #expect(run.isInterCoded && run.keepsFrames)
        #expect(Self.feed(&run, [Self.frame(0, key: false), Self.frame(1, key: true), Self.frame(2, key: false)]) == [false, true, true])
        let photo = run.photoFrame(for: Self.frame(2, key: false))
        #expect(photo.chosen.sequence == 2)
        #expect(photo.references.map(\.sequence) == [1])
        #expect(photo.frames.map(\.sequence) == [1, 2])
        // A new keyframe starts a new run.
        #expect(Self.feed(&run, [Self.frame(3, key: true)]) == [true])
        #expect(run.photoFrame(for: Self.frame(3, key: true)).references.isEmpty)
        // A lost frame ends it until the next keyframe.
        #expect(Self.feed(&run, [Self.frame(4, key: false, bytes: 0), Self.frame(5, key: false), Self.frame(6, key: true)]) == [false, false, true])
    }

    @Test func aRunPastItsLimitWaitsForTheNextKeyframe() {
        var run = PhotoFrameRun(layout: .compressed(codecName: "hevc"), byteLimit: 250)
        let eligible = Self.feed(&run, [Self.frame(0, key: true), Self.frame(1, key: false), Self.frame(2, key: false), Self.frame(3, key: false)])
        #expect(eligible == [true, true, false, false])
        #expect(run.frames.isEmpty)
        #expect(Self.feed(&run, [Self.frame(4, key: true)]) == [true])
    }

    @Test func framesThatDecodeOnTheirOwnAreNotKept() {
        for layout in [VideoSampleLayout.compressed(codecName: "mjpeg"), .raw(.yuyv422, bytesPerRow: nil)] {
            var run = PhotoFrameRun(layout: layout, byteLimit: 0)
            #expect(!run.keepsFrames)
            #expect(Self.feed(&run, [Self.frame(0, key: false), Self.frame(1, key: false, bytes: 0)]) == [true, false])
            #expect(run.frames.isEmpty)
            #expect(run.photoFrame(for: Self.frame(2, key: false)).frames.map(\.sequence) == [2])
        }
    }

    @Test func theLiveRingKeepsTheKeyframeItsSpanNeeds() {
        var ring = LivePhotoRing(isInterCoded: true)
        // Keyframes at 0, 5, 10 …; frames 100 ms apart; keep 300 ms.
        for index in 0..<13 { ring.append(Self.frame(index, key: index % 5 == 0), keep: 300_000_000, maximumFrames: 100) }
        // 300 ms before frame 12 is frame 9; its keyframe is 5.
        #expect(ring.frames.map(\.sequence) == Array(5...12))
        let selection = ring.selection(from: 700_000_000, to: 1_100_000_000)
        #expect(selection?.feed.map(\.sequence) == Array(5...11))
        #expect(selection?.shown.map(\.sequence) == Array(7...11))
        // A span before any keyframe kept starts at the first keyframe in it.
        var late = LivePhotoRing(isInterCoded: true)
        for index in 3..<9 { late.append(Self.frame(index, key: index == 5), keep: 10_000_000_000, maximumFrames: 100) }
        #expect(late.selection(from: 300_000_000, to: 800_000_000)?.shown.map(\.sequence) == [5, 6, 7, 8])
        #expect(late.selection(from: 300_000_000, to: 400_000_000) == nil)
        // The frame cap holds whatever the keyframes; once it took the only
        // keyframe, the span alone is kept.
        var capped = LivePhotoRing(isInterCoded: true)
        var most = 0
        for index in 0..<20 {
            capped.append(Self.frame(index, key: index == 0), keep: 200_000_000, maximumFrames: 6)
            most = max(most, capped.frames.count)
        }
        #expect(most == 6)
        #expect(capped.frames.map(\.sequence) == [17, 18, 19])
        // Frames that decode on their own are trimmed to the span alone.
        var raw = LivePhotoRing(isInterCoded: false)
        for index in 0..<13 { raw.append(Self.frame(index, key: index % 5 == 0), keep: 300_000_000, maximumFrames: 100) }
        #expect(raw.frames.map(\.sequence) == Array(9...12))
    }
}
