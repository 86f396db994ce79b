import ArgumentParser

@main
struct Capctl: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "capctl", abstract: "Record from cameras and microphones.")
}
