import Foundation
import Testing

/// `capctl set-torch` on bad input, and on a system without the LED asked for.
struct SetTorchCommandTests {
    @Test(arguments: [
        (["set-torch"], Int32(64), "say 'on' or 'off' (or --status to show the torch's state)"),
        (["set-torch", "dim"], 64, "dim"),
        (["set-torch", "on", "--level", "1.5"], 64, "--level 1.5 is outside 0.0-1.0; give a fraction of full output (such as 0.5), or max"),
        (["set-torch", "on", "--level", "-0.5"], 64, "is outside 0.0-1.0"),
        (["set-torch", "on", "--level", "0"], 64, "--level 0 turns nothing on; use 'off' to turn the torch off"),
        (["set-torch", "on", "--level", "bright"], 64, "bright"),
        (["set-torch", "off", "--level", "0.5"], 64, "--level applies to 'on'"),
        (["set-torch", "on", "--status"], 64, "--status shows the torch's state; leave out 'on'"),
        (["set-torch", "--status", "--level", "1"], 64, "--level applies when turning the torch on"),
        (["set-torch", "on", "--device", "/dev/null", "--led", "x"], 64, "give --device or --led, not both"),
        (["set-torch", "on", "--device", "/dev/null"], 65, "/dev/null: not a V4L2 device"),
        (["set-torch", "on", "--device", "test-pattern"], 69, "test-pattern: a virtual camera has no torch"),
        (["set-torch", "on", "--led", "no-such-led-here"], 66, "no LED named 'no-such-led-here' under /sys/class/leds"),
        (["set-torch", "on", "--led", "../../../etc"], 66, "no LED named '../../../etc'"),
    ])
    func failsWithOneLineAndTheDocumentedStatus(arguments: [String], status: Int32, message: String) throws {
        let result = try CapctlRun.run(arguments)
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
    }

    @Test func helpDocumentsTheLevelRulesAndStatuses() throws {
        let result = try CapctlRun.run(["set-torch", "--help"])
        #expect(result.status == 0)
        for text in ["--level", "max", "status 75", "--led", ":torch", "udev rule"] {
            #expect(result.stdout.contains(text), "missing \(text)")
        }
    }
}
