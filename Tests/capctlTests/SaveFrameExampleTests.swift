import Foundation
import Testing

/// Examples/SaveFrame, built with the package and run: a video data output
/// with BGRA videoSettings and a delegate on a dispatch queue saves the
/// 10th frame as JPEG and stops the session from inside its callback.
@Suite struct SaveFrameExampleTests {
    @Test func savesTheTenthFrameAsJPEG() throws {
        let scratch = try RecordScratch()
        let path = scratch.file("frame.jpg")
        let (status, said, errors) = try runExample("SaveFrame", [path])
        #expect(status == 0, "stderr: \(errors)")
        #expect(errors.isEmpty, "a library call wrote on stderr: \(errors)")
        // "PATH: bgra WxH", and a JPEG of that size.
        let words = said.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
        #expect(words.count == 3 && words[0] == "\(path):" && words[1] == "bgra", "\(said)")
        let probed = try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", path])
        #expect(probed.status == 0)
        let size = words.count == 3 ? words[2].split(separator: "x").joined(separator: ",") : "?"
        #expect(probed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,\(size)", "\(probed.stdout)")
        // The picture is the camera's (the test pattern's bars and ramps), not a flat or grey one.
        let stats = try runTool("ffmpeg", ["-v", "error", "-i", path, "-vf", "signalstats,metadata=print:file=-", "-f", "null", "-"])
        func value(_ key: String) -> Int? {
            stats.stdout.split(separator: "\n").first { $0.hasPrefix("lavfi.signalstats.\(key)=") }.flatMap { Int($0.split(separator: "=")[1]) }
        }
        let low = try #require(value("YMIN"), "\(stats.stdout)"), high = try #require(value("YMAX"), "\(stats.stdout)")
        #expect(high - low > 100, "luma from \(low) to \(high)")
    }
}
