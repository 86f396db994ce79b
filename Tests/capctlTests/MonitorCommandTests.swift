import Foundation
import Glibc
import Testing

/// `capctl monitor` runs until interrupted, writes its first line at once, and
/// ends with status 0 on SIGINT or SIGTERM.
struct MonitorCommandTests {
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalEndsItWithStatusZero(signal: Int32) throws {
        let process = Process()
        process.executableURL = CapctlRun.binary
        process.arguments = ["monitor", "--json"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // The first line arrives while it runs: it is flushed, not buffered.
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            first.append(chunk)
        }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let line = try #require(String(decoding: first, as: UTF8.self).split(separator: "\n").first)
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["event"] as? String == "monitoring")
        #expect(object?["devices"] is [[String: Any]])
        #expect(object?["time"] is String)
        #expect(err.fileHandleForReading.readDataToEndOfFile().isEmpty)
    }
}
