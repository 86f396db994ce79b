/// The command line's entry point, for the executables that run it.
public enum CapctlCommandLine {
    /// Parses the process's arguments and runs the command; exits with its status.
    public static func main() {
        Capctl.main()
    }

    /// Runs the command line in the process that hosts `capctl serve`'s server:
    /// `serve` runs `host` here instead of starting that process.
    package static func main(hosting host: any ServiceHost) {
        Capctl.main(host: host)
    }
}
