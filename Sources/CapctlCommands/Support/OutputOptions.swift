import ArgumentParser

/// The output choice shared by commands that print results.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print one JSON document on stdout instead of text.")
    var json = false
}
