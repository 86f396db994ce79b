import Foundation
import Testing

/// Examples/MotionClips, built with the package and run on a clip with two
/// movements (MotionTriggerCommandTests' clips, frame numbers drawn in):
/// CaptureKit's armed output, pre-roll and motion trigger make one file per
/// movement, each beginning about 2 s before it.
@Suite struct MotionClipsExampleTests {
    @Test func twoMovementsGiveTwoFilesEachWithTwoSecondsBefore() throws {
        let scratch = try RecordScratch()
        let movements = [90...119, 330...359]
        try MotionTriggerCommandTests.clip(scratch.file("two.y4m"), seconds: 16, movements: movements)
        let (status, said, errors) = try runExample("MotionClips", [scratch.file("two.y4m"), scratch.path])
        #expect(status == 0, "stderr: \(errors)")
        #expect(errors.isEmpty, "a library call wrote on stderr: \(errors)")
        #expect(scratch.contents == ["clip-1.mp4", "clip-2.mp4", "two.y4m"])

        // "PATH: 4.53 s" for each file, in order, as long as the file plays.
        let reported = said.split(separator: "\n").filter { $0.contains(".mp4: ") }
        #expect(reported.count == 2, "\(said)")
        for (index, movement) in movements.enumerated() {
            let path = scratch.file("clip-\(index + 1).mp4")
            let frames = try MotionTriggerCommandTests.clipFrames(path)
            let first = try #require(frames.first), last = try #require(frames.last)
            #expect(frames == Array(first...last), "\(path): frames \(first)…\(last) not each once in order")
            // 2 s of pre-roll from a keyframe: 60 frames before, up to a keyframe interval (1 s) more.
            #expect(first >= movement.lowerBound - 90 - 6 && first <= movement.lowerBound - 60 + 6, "\(path) begins at frame \(first)")
            // It goes on until the picture has been still for 2 s as the detector saw it: a detector busy
            // on a loaded machine drops frames (its `framesDropped`), and when it drops the last moving
            // ones, its still time starts that much earlier (frame 417 of 418 was seen in a full run);
            // when it drops the first still ones, the pause comes later.
            #expect(last >= movement.upperBound + 60 - 1 - 6 && last <= movement.upperBound + 60 + 6, "\(path) ends at frame \(last)")
            let line = try #require(reported.count > index ? reported[index] : nil)
            #expect(line.hasPrefix(path + ":"))
            let duration = Double(line.split(separator: " ")[1]) ?? 0
            #expect(abs(duration - Double(frames.count) / 30) < 0.05, "\(line): \(frames.count) frames")
        }
    }
}
