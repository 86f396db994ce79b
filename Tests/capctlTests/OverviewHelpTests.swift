import Foundation
import Testing

/// `capctl --help` describes what capctl does today: its overview names
/// every subcommand the help lists, and the containers and protocols it records and streams to.
struct OverviewHelpTests {
    @Test func theOverviewNamesEverySubcommand() throws {
        let result = try CapctlRun.run(["--help"])
        #expect(result.status == 0, "\(result.stderr)")
        let parts = result.stdout.components(separatedBy: "SUBCOMMANDS:")
        let overview = try #require(parts.first).replacingOccurrences(of: "\n", with: " ")
        let list = try #require(parts.last).split(separator: "\n", omittingEmptySubsequences: false).dropFirst().prefix { !$0.isEmpty }
        let listed = list.compactMap { line -> String? in
            // "  record                  Record video …": a name indented by two; its help's next lines go deeper.
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first else { return nil }
            return String(name)
        }.filter { $0 != "help" }
        #expect(listed.count == 12, "\(listed)")
        for name in listed {
            #expect(overview.contains("\(name),") || overview.contains("\(name))"), "the overview does not name \(name)")
        }
        for format in ["MP4", "MOV", "MKV", "WebM", "MPEG-TS", "RTMP", "SRT", "V4L2", "ALSA"] {
            #expect(overview.contains(format), "the overview does not name \(format)")
        }
        #expect(!overview.contains("probes their formats"))
    }
}
