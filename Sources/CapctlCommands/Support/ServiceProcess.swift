import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

/// What runs `capctl serve`'s server: capctl-serve's entry point passes one to
/// the command line (`CapctlCommandLine.main(hosting:)`), so that `serve` runs
/// there rather than starting that process.
package protocol ServiceHost: Sendable {
    /// Runs the service until SIGINT or SIGTERM; answers the exit status.
    func run(_ configuration: ServiceConfiguration) throws -> ExitStatus
}

/// Starts capctl-serve in this process's place. It is found beside the running
/// capctl (a build folder, or /usr/local/bin), or in ../libexec/capctl from it
/// (/usr/bin/capctl runs /usr/libexec/capctl/capctl-serve, as the package installs it).
enum ServiceProcess {
    static func execute(arguments: [String]) throws -> Never {
        let candidates = locations()
        for path in candidates where Posix.isAccessible(path, X_OK) {
            let failure = Posix.execute(path, arguments: [path] + arguments)
            throw CommandFailure("cannot start \(path): \(failure.reason)", status: .software)
        }
        throw CommandFailure("capctl serve needs capctl-serve, which is not installed beside capctl (looked at \(candidates.joined(separator: ", ")))",
                             status: .unavailable)
    }

    private static func locations() -> [String] {
        guard let executable = try? Posix.readlink("/proc/self/exe") else { return ["/usr/libexec/capctl/capctl-serve"] }
        let folder = executable.lastIndex(of: "/").map { String(executable[..<$0]) } ?? "."
        return [folder + "/capctl-serve", folder + "/../libexec/capctl/capctl-serve"]
    }
}
