import Foundation
import Testing

/// Examples/LoopRecorder, built with the package and run: the AVFoundation
/// recorder loop (restart from didFinishRecordingTo at each duration limit)
/// makes its files, each as long as the limit.
@Suite struct LoopRecorderExampleTests {
    @Test func restartsFromTheDelegateAtEachLimit() throws {
        let scratch = try RecordScratch()
        let (status, said, errors) = try runExample("LoopRecorder", [scratch.path, "0.8", "3"])
        #expect(status == 0, "stderr: \(errors)")
        #expect(errors.isEmpty, "a library call wrote on stderr: \(errors)")

        // "PATH: 0.800 s, 24 frames (the recording reached its max-duration limit)" for each file.
        // "focus: locked, exposure: locked" (a virtual camera's are fixed too).
        #expect(said.hasPrefix("focus: "), "\(said)")
        let lines = said.split(separator: "\n").filter { $0.contains(".mp4: ") }
        #expect(lines.count == 3, "\(said)")
        for number in 1...3 {
            let path = scratch.file("loop-\(number).mp4")
            let line = try #require(lines.count >= number ? lines[number - 1] : nil)
            #expect(line.hasPrefix(path + ": 0.800 s"), "\(line)")
            #expect(line.hasSuffix("(the recording reached its max-duration limit)"), "\(line)")
            let frames = Int(line.split(separator: ",")[1].split(separator: " ")[0]) ?? -1
            #expect(try packetTimes(path).count == frames, "\(path)")
            let probed = try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
            #expect(abs((Double(probed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 0.8) <= 0.05, "\(path): \(probed.stdout)")
        }
    }
}
