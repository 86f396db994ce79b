import Foundation
import Testing

/// `capctl set` and `capctl controls` on bad input: one line on stderr naming the
/// problem and what to do instead, the documented status, nothing on stdout.
struct SetCommandTests {
    @Test(arguments: [
        (["set", "/dev/null"], Int32(64), "give at least one name=value setting (or --hold to only hold the configuration lock)"),
        (["set", "/dev/null", "brightness"], 64, "brightness"),
        (["set", "/dev/null", "zoom=2", "--ramp", "0"], 64, "--ramp 0.0 must be a rate above 0"),
        (["set", "/dev/null", "zoom=2", "--ramp", "-1"], 64, "--ramp"),
        (["set", "/dev/null", "brightness=1", "--ramp", "1"], 64, "--ramp applies to zoom: add a zoom=FACTOR setting"),
        (["set", "/dev/null", "brightness=1"], 65, "/dev/null: not a V4L2 device"),
        (["set", "/nonexistent/video9", "brightness=1"], 66, "/nonexistent/video9: no such file or device"),
        (["set", "audio:0", "brightness=1"], 65, "not a camera"),
        (["set", "test-pattern", "brightness=1"], 64, "test-pattern: a virtual camera has no controls to set"),
        (["set", "test-tone", "brightness=1"], 65, "test-tone: not a video capture device (it is a virtual microphone)"),
        (["controls", "/dev/null"], 65, "/dev/null: not a V4L2 device"),
        (["controls", "/nonexistent/video9", "brightness"], 66, "no such file or device"),
        (["controls"], 64, "Missing expected argument"),
    ])
    func failsWithOneLineAndTheDocumentedStatus(arguments: [String], status: Int32, message: String) throws {
        let result = try CapctlRun.run(arguments)
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.hasPrefix("capctl: error: "))
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
    }

    @Test func helpDescribesTheFeaturesAndTheLock() throws {
        let result = try CapctlRun.run(["help", "set"])
        #expect(result.status == 0)
        for text in ["focus=locked|auto|continuous", "zoom=FACTOR", "--ramp", "--hold", "configuration lock", "status 69"] {
            #expect(result.stdout.contains(text), "missing \(text)")
        }
    }
}
