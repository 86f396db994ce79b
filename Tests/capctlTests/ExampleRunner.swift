import Foundation

/// Runs one of the package's example programs (built beside the tests) to
/// its end: its status, what it printed, and what it wrote on stderr.
func runExample(_ name: String, _ arguments: [String]) throws -> (status: Int32, said: String, errors: String) {
    let process = Process()
    process.executableURL = Bundle.main.bundleURL.appendingPathComponent(name)
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, said, errors)
}
