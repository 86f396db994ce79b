import Foundation

/// Runs the built `capctl` binary and collects what it printed.
struct CapctlRun {
    let status: Int32
    let stdout: String
    let stderr: String

    /// The `capctl` beside the test bundle in the build products directory.
    static var binary: URL {
        Bundle.main.bundleURL.appendingPathComponent("capctl")
    }

    static func run(_ arguments: [String], environment: [String: String] = [:], in directory: URL? = nil) throws -> CapctlRun {
        let process = Process()
        process.executableURL = binary
        if let directory { process.currentDirectoryURL = directory }
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CapctlRun(status: process.terminationStatus,
                         stdout: String(decoding: outData, as: UTF8.self),
                         stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The lines of stderr, without the trailing empty one.
    var stderrLines: [Substring] { stderr.split(separator: "\n") }
}
