import Foundation
import Testing
@testable import CaptureKit

/// The pre-roll ring on its own: what it keeps of frames and audio handed
/// to it at 30 fps (a keyframe every 30 frames), and what a resume takes.
@Suite struct PreRollRingTests {
    static func at(_ frame: Int) -> MediaTime { MediaTime(value: Int64(frame), timescale: 30).nanoseconds }

    static func frame(_ number: Int, bytes: Int = 1000, keyframeEvery: Int = 30) -> VideoSampleBuffer {
        let storage = SampleStorage(count: bytes) { $0.initializeMemory(as: UInt8.self, repeating: UInt8(number % 256)) }
        return VideoSampleBuffer(storage: storage, layout: .compressed(codecName: "h264"), width: 320, height: 240,
                                 presentationTime: at(number), duration: MediaTime(value: 1, timescale: 30), sequence: UInt64(number),
                                 isKeyframe: number % keyframeEvery == 0)
    }

    /// 1600 sample frames (1/30 s at 48 kHz) of mono s16 beginning at frame `number`'s time.
    static func audio(_ number: Int) -> AudioSampleBuffer {
        AudioSampleBuffer(storage: SampleStorage(count: 3200) { $0.initializeMemory(as: UInt8.self, repeating: 0) }, format: .s16,
                          channels: 1, sampleRate: 48_000, frameCount: 1600, presentationTime: at(number))
    }

    @Test func itHoldsAtLeastItsDurationFromAKeyframeAndAtMostOneKeyframeIntervalMore() {
        let ring = PreRollRing(duration: MediaTime(value: 1, timescale: 1), memoryLimit: 1 << 30, hasVideo: true)
        ring.arm(from: .zero)
        for number in 0..<200 {
            ring.keep(Self.frame(number), index: 0)
            ring.keep(Self.audio(number), index: 1)
            let held = ring.holding.duration.seconds
            // Once 2 s have passed: at least 1 s, at most 1 s and one interval (1 s) more.
            if number >= 60 { #expect(held >= 1 && held <= 2 + 1e-9, "frame \(number): \(held) s") }
        }
        let taken = ring.take(before: Self.at(200))
        let start = try? #require(taken?.start)
        // The latest keyframe that leaves 1 s behind the newest frame (199): frame 150.
        #expect(start == Self.at(150))
        let samples = taken?.samples ?? []
        let video = samples.compactMap { if case .video(let frame) = $0.1 { return frame } else { return nil } }
        #expect(video.first?.isKeyframe == true)
        #expect(video.map(\.sequence) == Array(150...199).map(UInt64.init))
        // Audio from the first frame on, each buffer once, in time order with the frames.
        let audio = samples.compactMap { if case .audio(let buffer) = $0.1 { return buffer.presentationTime } else { return nil } }
        #expect(audio == (150...199).map(Self.at))
        #expect(samples.map(\.1.presentationTime) == samples.map(\.1.presentationTime).sorted())
        // Taken: empty and idle until the next pause.
        #expect(ring.holding.bytes == 0)
        ring.keep(Self.frame(210), index: 0)
        #expect(ring.holding.bytes == 0)
    }

    @Test func itKeepsNothingBeforeThePauseNorBeforeAKeyframe() {
        let ring = PreRollRing(duration: MediaTime(value: 5, timescale: 1), memoryLimit: 1 << 30, hasVideo: true)
        ring.keep(Self.frame(0), index: 0)
        #expect(ring.holding.bytes == 0, "kept a frame while not paused")
        ring.arm(from: Self.at(31))
        ring.keep(Self.frame(30), index: 0)
        for number in 31..<70 { ring.keep(Self.frame(number), index: 0) }
        let taken = ring.take(before: Self.at(70))
        #expect(taken?.start == Self.at(60))
        #expect(taken?.samples.count == 10)
    }

    @Test func itStaysWithinItsMemoryLettingTheOldestStretchesGo() {
        let limit = 100_000
        let ring = PreRollRing(duration: MediaTime(value: 30, timescale: 1), memoryLimit: limit, hasVideo: true)
        ring.arm(from: .zero)
        for number in 0..<300 {
            ring.keep(Self.frame(number, bytes: 2000, keyframeEvery: 10), index: 0)
            #expect(ring.holding.bytes <= limit)
        }
        #expect(ring.holding.droppedForMemory > 0)
        let taken = ring.take(before: Self.at(300))
        let first = taken?.samples.first.flatMap { if case .video(let frame) = $0.1 { return frame } else { return nil } }
        #expect(first?.isKeyframe == true)
        // 50 frames of 2000 bytes fit: whole stretches of 10, the newest ones.
        #expect(taken?.samples.count == 50)
    }

    @Test func audioThatRanAheadOfTheResumeIsKeptNotLost() {
        // The encoder lags: by the time the resume keyframe (frame 60) is
        // chosen, the writing thread has already passed audio up to frame 75
        // into the ring. Nothing of it comes again, so all of it is taken.
        let ring = PreRollRing(duration: MediaTime(value: 1, timescale: 1), memoryLimit: 1 << 30, hasVideo: true)
        ring.arm(from: .zero)
        for number in 0..<60 { ring.keep(Self.frame(number), index: 0) }
        for number in 0..<75 { ring.keep(Self.audio(number), index: 1) }
        let taken = ring.take(before: Self.at(60))
        let audio = (taken?.samples ?? []).compactMap { if case .audio(let buffer) = $0.1 { return buffer } else { return nil } }
        let video = (taken?.samples ?? []).compactMap { if case .video(let frame) = $0.1 { return frame } else { return nil } }
        // 1 s before the resume: from the keyframe at 30.
        #expect(taken?.start == Self.at(30))
        #expect(video.count == 30 && video.last?.presentationTime == Self.at(59), "video before the resume keyframe only")
        #expect(audio.count == 45 && audio.first?.presentationTime == Self.at(30))
        #expect(audio.last?.presentationTime == Self.at(74), "audio past the resume point is written, not dropped")
    }

    @Test func itKeepsItsDurationBehindTheResumeNotBehindTheEncodersNewestFrame() {
        // The encoder runs ahead: it has handed the ring frames up to 99
        // while the writing thread has passed only frame 59, and the resume
        // falls on the keyframe at 60. A ring trimmed behind frame 99 would
        // keep nothing from before 60.
        let ring = PreRollRing(duration: MediaTime(value: 1, timescale: 1), memoryLimit: 1 << 30, hasVideo: true)
        ring.arm(from: .zero)
        for number in 0..<60 { ring.keep(Self.frame(number), index: 0) }
        ring.passed(videoAt: Self.at(59))
        for number in 60..<100 { ring.keep(Self.frame(number), index: 0) }
        let taken = ring.take(before: Self.at(60))
        let video = (taken?.samples ?? []).compactMap { if case .video(let frame) = $0.1 { return frame } else { return nil } }
        // 1 s before the resume: from the keyframe at 30.
        #expect(taken?.start == Self.at(30))
        #expect(video.map(\.sequence) == Array(30...59).map(UInt64.init))
    }

    @Test func anAudioRecordingKeepsItsDurationOfAudio() {
        let ring = PreRollRing(duration: MediaTime(value: 1, timescale: 1), memoryLimit: 1 << 30, hasVideo: false)
        ring.arm(from: .zero)
        for number in 0..<90 { ring.keep(Self.audio(number), index: 0) }
        let taken = ring.take(before: Self.at(90))
        // The buffer that reaches back 1 s before the end of the newest one (which ends at frame 90).
        #expect(taken?.start == Self.at(60))
        #expect(taken?.samples.count == 30)
    }
}

/// The motion score on pictures made for it: a box crossing a still
/// picture scores; sensor-like noise and light changing evenly do not.
@Suite struct MotionAnalyzerTests {
    static func picture(_ number: Int, brightness: Double = 0, noise: Int = 0, box: Int? = nil) -> VideoSampleBuffer {
        let width = 320, height = 240
        // A cheap generator (xorshift), seeded by the frame number: the noise differs from frame to frame.
        var state = UInt64(number) &* 0x9E37_79B9_7F4A_7C15 | 1
        let storage = SampleStorage(count: width * height * 3 / 2) { bytes in
            for y in 0..<height {
                for x in 0..<width {
                    var value = 30 + x / 5 + y / 5 + Int(brightness)
                    if let box, (box..<box + 60).contains(x), (90..<150).contains(y) { value = 255 }
                    if noise > 0 {
                        state ^= state << 13
                        state ^= state >> 7
                        state ^= state << 17
                        value += Int(state % UInt64(2 * noise + 1)) - noise
                    }
                    bytes[y * width + x] = UInt8(clamping: value)
                }
            }
            for index in width * height..<bytes.count { bytes[index] = 128 }
        }
        return VideoSampleBuffer(storage: storage, layout: .raw(.yuv420p, bytesPerRow: nil), width: width, height: height,
                                 presentationTime: PreRollRingTests.at(number), duration: nil, sequence: UInt64(number))
    }

    @Test func aCrossingBoxScoresAndNoiseAndEvenLightDoNot() throws {
        var analyzer = MotionAnalyzer()
        var quiet: [Double] = []
        // Noise of ±30 levels a pixel, and light rising by 80 levels over 4 s, then falling fast.
        for number in 0..<120 {
            let thumbnail = try #require(LumaThumbnail(Self.picture(number, brightness: Double(number) * 80 / 120, noise: 30)))
            quiet.append(analyzer.score(thumbnail, at: PreRollRingTests.at(number)))
        }
        for number in 120..<130 {
            let thumbnail = try #require(LumaThumbnail(Self.picture(number, brightness: 80 - Double(number - 120) * 8, noise: 30)))
            quiet.append(analyzer.score(thumbnail, at: PreRollRingTests.at(number)))
        }
        #expect(quiet.max() ?? 100 < MotionDetector.Configuration.defaultThreshold, "scores \(quiet.max() ?? 0)")
        var moving: [Double] = []
        for number in 130..<150 {
            let thumbnail = try #require(LumaThumbnail(Self.picture(number, brightness: 20, noise: 30, box: 20 + (number - 130) * 7)))
            moving.append(analyzer.score(thumbnail, at: PreRollRingTests.at(number)))
        }
        // The box covers 60x60 of 320x240 (4.7 %).
        #expect(moving.min() ?? 0 >= 3, "scores \(moving)")
    }

    @Test func compressedFramesCannotBeRead() {
        #expect(LumaThumbnail(PreRollRingTests.frame(0)) == nil)
    }
}
