import CapctlCommands
import CapctlService

// The command line, with `serve` running its server in this process.
CapctlCommandLine.main(hosting: HTTPServiceHost())
