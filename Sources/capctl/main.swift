import CapctlCommands

// Every command but `serve`'s server runs in this process; `capctl serve` starts capctl-serve.
CapctlCommandLine.main()
