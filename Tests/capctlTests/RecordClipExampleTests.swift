import Foundation
import Testing

/// Examples/RecordClip, built with the package and run: CaptureKit used in
/// AVFoundation's order makes three clips on one running session.
@Suite struct RecordClipExampleTests {
    @Test func recordsThreeClipsOnOneRunningSession() throws {
        let scratch = try RecordScratch()
        let (status, said, errors) = try runExample("RecordClip", [scratch.path])
        #expect(status == 0, "stderr: \(errors)")
        #expect(errors.isEmpty, "a library call wrote on stderr: \(errors)")

        // "PATH: 3.00 s, 90 frames, 144000 audio samples" for each clip, in order.
        let reported = said.split(separator: "\n").filter { $0.contains(".mp4: ") }
        #expect(reported.count == 3, "\(said)")
        for (index, seconds) in [3.0, 2.0, 1.0].enumerated() {
            let path = scratch.file("clip-\(index + 1).mp4")
            #expect(FileManager.default.fileExists(atPath: path))
            let line = try #require(reported.count > index ? reported[index] : nil)
            #expect(line.hasPrefix(path + ":"))
            let frames = Int(line.split(separator: ",")[1].split(separator: " ")[0]) ?? -1
            // The clip lasts about what the program slept: each switch and
            // stop takes effect at the next frame, which on a starved machine
            // comes late (half a second was seen beside a full test run).
            // What must hold exactly is that the file lasts what was reported.
            let duration = Double(line.split(separator: " ")[1]) ?? 0
            #expect(duration > 0 && abs(duration - seconds) < 1, "\(line)")
            let fileDuration = try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
            #expect(abs((Double(fileDuration.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1) - duration) < 0.04,
                    "\(path) lasts \(fileDuration.stdout), \(line)")
            // What the delegate heard is what the file holds, and it decodes cleanly.
            #expect(try packetTimes(path).count == frames, "\(path)")
            #expect(try runTool("ffmpeg", ["-v", "error", "-xerror", "-i", path, "-f", "null", "-"]).status == 0)
        }
    }
}
