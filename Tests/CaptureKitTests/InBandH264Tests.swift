import Foundation
import Testing
@testable import CaptureKit

/// H.264 as cameras deliver it: Annex B access units with the parameter sets
/// in band (with each keyframe, or in a buffer of their own), no keyframe
/// flag from the driver, and capture joining in the middle of a GOP. What a
/// recording reports is what its file holds.
@Suite struct InBandH264Tests {
    static let gop = 15
    static let frameCount = 45

    /// The access units of a 45-frame 160x120 H.264 stream at 30 fps with a
    /// keyframe every 15 frames (parameter sets with each), as libx264 writes
    /// a raw stream; made once.
    static let accessUnits = makeAccessUnits(codec: "h264")
    /// The same as HEVC, from libx265 with its parameter sets (VPS, SPS, PPS) repeated at each IDR.
    static let hevcAccessUnits = makeAccessUnits(codec: "hevc")

    static func makeAccessUnits(codec: String) -> [[UInt8]] {
        guard let scratch = try? WriterScratchDirectory() else { return [] }
        let path = scratch.file("camera.\(codec)")
        let encoder = codec == "h264"
            ? ["-c:v", "libx264", "-preset", "ultrafast", "-g", "\(gop)", "-bf", "0"]
            : ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "keyint=\(gop):min-keyint=\(gop):bframes=0:repeat-headers=1:open-gop=0:log-level=error"]
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30",
                            "-frames:v", "\(frameCount)"] + encoder + ["-pix_fmt", "yuv420p", "-f", codec, path]
        guard (try? ffmpeg.run()) != nil else { return [] }
        ffmpeg.waitUntilExit()
        guard ffmpeg.terminationStatus == 0, let reader = try? CompressedSampleReader(path: path, mediaType: .video) else { return [] }
        var units: [[UInt8]] = []
        while let sample = try? reader.next() { units.append(sample.data) }
        return units
    }

    /// A camera that sends `units` as a V4L2 H.264 camera does (no keyframe
    /// flags: the capture layer reads them from the bitstream), one every
    /// 1/30 s of capture time, then ends. With `separateParameterSets`, a
    /// keyframe's parameter sets come in a buffer of their own before it.
    final class AnnexBCamera: CaptureSource, @unchecked Sendable {
        let mediaType = MediaType.video
        let path = "annexb-camera"
        let localizedName = "Annex B camera"
        let modelID: String? = nil
        let audioFormat: CaptureAudioFormat? = nil
        let droppedByDevice = 0
        let units: [[UInt8]]
        let separateParameterSets: Bool
        let codec: AccessUnit.Codec
        var codecName: String { codec == .h264 ? "h264" : "hevc" }
        var videoFormat: CaptureVideoFormat? {
            CaptureVideoFormat(layout: .compressed(codecName: codecName), width: 160, height: 120,
                               frameDuration: MediaTime(value: 1, timescale: 30), fourcc: codec == .h264 ? "H264" : "HEVC")
        }

        init(units: [[UInt8]], separateParameterSets: Bool = false, codec: AccessUnit.Codec = .h264) {
            self.units = units
            self.separateParameterSets = separateParameterSets
            self.codec = codec
        }

        func open() throws(CaptureError) {}
        func close() {}

        func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
            var conditioner = InBandParameterSets(codec: codec)
            let start = MonotonicClock.nowNanoseconds()
            for (number, unit) in units.enumerated() {
                // Frames come when a live camera's would, at 30 fps.
                if stop.wait(untilNanoseconds: start + Int64(number) * 33_333_333) { return .stopped }
                var buffers = [unit]
                if separateParameterSets {
                    let summary = unit.withUnsafeBytes { AccessUnit($0, codec: codec) }
                    if let last = summary.parameterSetRanges.last {
                        buffers = [Array(unit[..<last.upperBound]), Array(unit[last.upperBound...])]
                    }
                }
                for bytes in buffers {
                    let storage = bytes.withUnsafeBytes { SampleStorage(copying: $0) }
                    guard let (delivered, isKeyframe) = conditioner.deliverable(storage) else { continue }
                    deliver(.video(VideoSampleBuffer(
                        storage: delivered, layout: .compressed(codecName: codecName), width: 160, height: 120,
                        presentationTime: MediaTime(value: start + Int64(number) * 33_333_333, timescale: MonotonicClock.timescale),
                        duration: MediaTime(value: 1, timescale: 30), sequence: UInt64(number), isKeyframe: isKeyframe)))
                }
            }
            return .endOfInput
        }
    }

    final class Recorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
        private let condition = NSCondition()
        private(set) var files: [(file: RecordedFile, error: RecordingError?)] = []
        private(set) var reason: RecordingStopReason?
        private(set) var error: RecordingError?

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo file: RecordedFile, error: RecordingError?) {
            condition.lock()
            files.append((file, error))
            condition.unlock()
        }

        func fileOutput(_ output: CaptureFileOutput, didEndRecordingWith reason: RecordingStopReason, error: RecordingError?) {
            condition.lock()
            self.reason = reason
            self.error = error
            condition.broadcast()
            condition.unlock()
        }

        func waitForEnd() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: 30)
            while reason == nil { if !condition.wait(until: deadline) { return false } }
            return true
        }
    }

    func record(_ camera: AnnexBCamera, to output: MovieFileOutput, start: (Recorder) -> Void) throws -> Recorder {
        let recorder = Recorder()
        start(recorder)
        let session = CaptureSession()
        session.addInput(CaptureInput(source: camera))
        session.addOutput(output)
        try session.startRunning()
        #expect(recorder.waitForEnd())
        session.stopRunning()
        return recorder
    }

    /// Packets in the file's video track and whether the first is a keyframe, as ffprobe reads them.
    func packets(_ path: String) throws -> (count: Int, firstIsKey: Bool) {
        let object = try FFprobe.json(["-select_streams", "v:0", "-show_entries", "packet=flags", path])
        let packets = object["packets"] as? [[String: Any]] ?? []
        return (packets.count, (packets.first?["flags"] as? String)?.hasPrefix("K") ?? false)
    }

    /// Whether ffmpeg decodes every frame of the file without an error.
    func decodesCleanly(_ path: String) throws -> Bool {
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-v", "error", "-xerror", "-nostdin", "-i", path, "-f", "null", "-"]
        let errors = Pipe()
        ffmpeg.standardError = errors
        try ffmpeg.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        ffmpeg.waitUntilExit()
        return ffmpeg.terminationStatus == 0 && said.isEmpty
    }

    // MARK: Reading the bitstream

    @Test func accessUnitsSayWhereDecodingCanStart() throws {
        let units = Self.accessUnits
        try #require(units.count == Self.frameCount)
        for (number, unit) in units.enumerated() {
            let summary = unit.withUnsafeBytes { AccessUnit($0, codec: .h264) }
            let keyframe = number % Self.gop == 0
            #expect(summary.hasPicture, "frame \(number)")
            #expect(summary.startsRandomAccess == keyframe, "frame \(number)")
            #expect(summary.hasParameterSets == keyframe, "frame \(number): libx264 repeats SPS and PPS with each IDR")
            if keyframe {
                // SPS (type 7) then PPS (type 8), each behind its start code.
                let types = summary.parameterSetRanges.map { range -> UInt8 in
                    let payload = unit.withUnsafeBytes { AccessUnit.nextStartCode(in: $0, from: range.lowerBound)!.payload }
                    return unit[payload] & 0x1F
                }
                #expect(types == [7, 8])
            }
        }
    }

    @Test func startCodesOfThreeAndFourBytesAreFound() {
        let bytes: [UInt8] = [0, 0, 0, 1, 0x67, 0xAA, 0, 0, 1, 0x68, 0xBB, 0, 0, 0, 1, 0x65, 0x88, 0x84]
        let summary = bytes.withUnsafeBytes { AccessUnit($0, codec: .h264) }
        #expect(summary.parameterSetRanges == [0..<6, 6..<11])
        #expect(summary.startsRandomAccess && summary.hasPicture)
        // HEVC: VPS, SPS, PPS, then a CRA slice (type 21) and a trailing picture (type 1).
        let hevc: [UInt8] = [0, 0, 1, 32 << 1, 1, 0, 0, 1, 33 << 1, 1, 0, 0, 1, 34 << 1, 1, 0, 0, 1, 21 << 1, 1]
        let irap = hevc.withUnsafeBytes { AccessUnit($0, codec: .hevc) }
        #expect(irap.parameterSetRanges.count == 3 && irap.startsRandomAccess)
        let trailing: [UInt8] = [0, 0, 1, 1 << 1, 1, 0xFF]
        let picture = trailing.withUnsafeBytes { AccessUnit($0, codec: .hevc) }
        #expect(picture.hasPicture && !picture.startsRandomAccess && !picture.hasParameterSets)
    }

    @Test func parameterSetsAloneGoInFrontOfTheNextKeyframe() throws {
        let units = Self.accessUnits
        try #require(units.count == Self.frameCount)
        var conditioner = InBandParameterSets(codec: .h264)
        // Joined mid-GOP: a frame that refers to pictures never seen.
        #expect(units[3].withUnsafeBytes { conditioner.take($0) } == .deliver(isKeyframe: false))
        let key = units[15]
        let summary = key.withUnsafeBytes { AccessUnit($0, codec: .h264) }
        let split = summary.parameterSetRanges.last!.upperBound
        let sets = Array(key[..<split]), picture = Array(key[split...])
        #expect(sets.withUnsafeBytes { conditioner.take($0) } == .absorbed)
        #expect(picture.withUnsafeBytes { conditioner.take($0) } == .deliverWithPrefix(sets))
        #expect(units[16].withUnsafeBytes { conditioner.take($0) } == .deliver(isKeyframe: false))
        // A later keyframe without its own parameter sets gets the latest ones.
        #expect(picture.withUnsafeBytes { conditioner.take($0) } == .deliverWithPrefix(sets))
        // Before any parameter set, a keyframe cannot start decoding.
        var fresh = InBandParameterSets(codec: .h264)
        #expect(picture.withUnsafeBytes { fresh.take($0) } == .deliver(isKeyframe: false))
    }

    // MARK: Recording

    /// Copied from frame 5 on (mid-GOP): the file starts at the keyframe at
    /// frame 15 with its parameter sets, the 10 frames before it are counted
    /// as dropped, and the reported frames are the file's packets.
    @Test(arguments: [("mp4", false, false), ("mp4", true, false), ("mov", false, false), ("ts", false, false),
                      ("mkv", false, false), ("mp4", false, true), ("mkv", false, true), ("ts", false, true)])
    func copyJoinedMidGOPStartsAtTheKeyframe(container: String, fragmented: Bool, separateParameterSets: Bool) throws {
        let units = Self.accessUnits
        try #require(units.count == Self.frameCount)
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("copy.\(container)")
        let output = MovieFileOutput()
        output.settings.video = .passthrough
        output.settings.fragmentInterval = fragmented ? MediaTime(value: 1, timescale: 2) : .invalid
        let camera = AnnexBCamera(units: Array(units[5...]), separateParameterSets: separateParameterSets)
        let recorder = try record(camera, to: output) { output.startRecording(to: path, recordingDelegate: $0) }

        #expect(recorder.reason == .endOfInput)
        #expect(recorder.error == nil)
        let file = try #require(recorder.files.first?.file)
        #expect(file.isComplete)
        #expect(file.videoFrames == 30)
        #expect(output.statistics.droppedBeforeKeyframe == 10)
        #expect(output.statistics.videoFrames == 30)
        let written = try packets(path)
        #expect(written.count == file.videoFrames)
        #expect(written.firstIsKey)
        #expect(try FFprobe.frames(path).count == 30)
        #expect(try decodesCleanly(path))
    }

    /// HEVC copied the same way, its VPS, SPS and PPS in band: every movie
    /// container, joined mid-GOP, starting at the IRAP picture.
    @Test(arguments: ["mp4", "mov", "ts", "mkv"])
    func hevcCopyJoinedMidGOPStartsAtTheKeyframe(container: String) throws {
        let units = Self.hevcAccessUnits
        try #require(units.count == Self.frameCount)
        let keyframes = units.enumerated().filter { $0.element.withUnsafeBytes { AccessUnit($0, codec: .hevc).startsRandomAccess } }.map(\.offset)
        #expect(keyframes == [0, 15, 30])
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("copy.\(container)")
        let output = MovieFileOutput()
        output.settings.video = .passthrough
        let camera = AnnexBCamera(units: Array(units[5...]), separateParameterSets: true, codec: .hevc)
        let recorder = try record(camera, to: output) { output.startRecording(to: path, recordingDelegate: $0) }

        #expect(recorder.error == nil)
        let file = try #require(recorder.files.first?.file)
        #expect(file.videoFrames == 30)
        #expect(output.statistics.droppedBeforeKeyframe == 10)
        let written = try packets(path)
        #expect(written.count == 30)
        #expect(written.firstIsKey)
        #expect(try decodesCleanly(path))
    }

    /// Encoding a camera's H.264 again: decoding starts at the first keyframe,
    /// and then every frame is in the file.
    @Test func encodeJoinedMidGOPStartsAtTheKeyframe() throws {
        let units = Self.accessUnits
        try #require(units.count == Self.frameCount)
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("encoded.mp4")
        let output = MovieFileOutput()
        let recorder = try record(AnnexBCamera(units: Array(units[5...])), to: output) { output.startRecording(to: path, recordingDelegate: $0) }

        #expect(recorder.error == nil)
        let file = try #require(recorder.files.first?.file)
        #expect(file.videoFrames == 30)
        #expect(output.statistics.droppedBeforeKeyframe == 10)
        #expect(try packets(path).count == 30)
        #expect(try decodesCleanly(path))
    }

    /// Frames that never reach a keyframe cannot be written: the recording
    /// fails saying so, instead of reporting frames that are not there.
    @Test(arguments: [true, false])
    func framesWithoutAKeyframeAreAnErrorNotAFile(copy: Bool) throws {
        let units = Self.accessUnits
        try #require(units.count == Self.frameCount)
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("nothing.mp4")
        let output = MovieFileOutput()
        if copy { output.settings.video = .passthrough }
        let recorder = try record(AnnexBCamera(units: Array(units[1..<15])), to: output) { output.startRecording(to: path, recordingDelegate: $0) }

        #expect(recorder.reason == .error)
        guard case .nothingWritten(let failed, _)? = recorder.error else {
            Issue.record("expected nothingWritten, got \(String(describing: recorder.error))")
            return
        }
        #expect(failed == path)
        let file = try #require(recorder.files.first)
        #expect(file.file.videoFrames == 0)
        #expect(!file.file.isComplete)
        #expect(output.statistics.videoFrames == 0)
        #expect(output.statistics.droppedBeforeKeyframe == 14)
        // Copied, nothing in the file could be decoded: there is no file.
        if copy { #expect(!FileManager.default.fileExists(atPath: path)) }
    }

    /// Segments of copied H.264 begin at keyframes, so each plays on its own.
    @Test func copiedSegmentsStartAtKeyframes() throws {
        let units = Self.accessUnits
        try #require(units.count == Self.frameCount)
        let scratch = try WriterScratchDirectory()
        let output = MovieFileOutput()
        output.settings.video = .passthrough
        output.segmentDuration = MediaTime(value: 3, timescale: 10)
        let template = try FileNameTemplate(scratch.file("part-%n.mp4"))
        let recorder = try record(AnnexBCamera(units: units), to: output) { output.startRecording(toTemplate: template, recordingDelegate: $0) }

        #expect(recorder.error == nil)
        let files = recorder.files.map(\.file).sorted { $0.index < $1.index }
        #expect(files.map(\.videoFrames) == [15, 15, 15])
        for file in files {
            let written = try packets(file.path)
            #expect(written.count == file.videoFrames, "\(file.path)")
            #expect(written.firstIsKey, "\(file.path)")
            #expect(try decodesCleanly(file.path), "\(file.path)")
        }
    }
}
