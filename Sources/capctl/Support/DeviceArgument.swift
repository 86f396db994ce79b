import ArgumentParser
import CaptureKit

/// A device as the user names it on the command line: a node path or ALSA
/// name, a unique ID, or `video:N` / `audio:N`. Resolved through CaptureKit.
struct DeviceArgument: ExpressibleByArgument, CustomStringConvertible {
    let specifier: String

    init?(argument: String) {
        guard !argument.isEmpty else { return nil }
        specifier = argument
    }

    var description: String { specifier }

    static var defaultCompletionKind: CompletionKind { .file() }

    /// The device, or a DeviceError naming it and the cause.
    func resolve(in discovery: DeviceDiscovery, expecting mediaType: MediaType? = nil) throws(DeviceError) -> CaptureDevice {
        try discovery.resolve(specifier, expecting: mediaType)
    }
}

extension MediaType: ExpressibleByArgument {}
