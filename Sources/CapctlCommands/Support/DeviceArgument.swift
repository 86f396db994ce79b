import ArgumentParser
import CaptureKit

/// A device as the user names it on the command line: a node path or ALSA
/// name, a unique ID, `video:N` / `audio:N`, or a virtual device
/// (`test-pattern`, `test-tone[:HZ]`, `file:PATH`). Resolved through CaptureKit.
package struct DeviceArgument: ExpressibleByArgument, CustomStringConvertible {
    let specifier: String

    package init?(argument: String) {
        guard !argument.isEmpty else { return nil }
        specifier = argument
    }

    package var description: String { specifier }

    package static var defaultCompletionKind: CompletionKind { .file() }

    /// A real camera, resolved as every command resolves a device; a virtual
    /// one is refused with what `refusal` says about it.
    func camera(in discovery: DeviceDiscovery, refusingVirtual refusal: (String) -> CommandFailure) throws -> CaptureDevice {
        switch try named(in: discovery, expecting: .video) {
        case .hardware(let camera): return camera
        case .virtual: throw refusal(specifier)
        }
    }

    /// The device, virtual ones (`test-pattern`, `file:PATH` …) included,
    /// resolved as `record` and `snap` resolve it; a failure names it and the cause.
    func named(in discovery: DeviceDiscovery, expecting mediaType: MediaType? = nil) throws(CommandFailure) -> NamedDevice {
        do { return try NamedDevice(specifier, expecting: mediaType, discovery: discovery) } catch { throw CommandFailure(error) }
    }
}

extension MediaType: ExpressibleByArgument {}
