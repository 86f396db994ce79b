import ArgumentParser

/// `serve`'s WebRTC (WHEP) options: the UDP ports media may use and the STUN
/// and TURN servers for viewers behind NAT. Media leaves only from the
/// address the service listens on (every address with 0.0.0.0 or ::).
struct WebRTCOptions: ParsableArguments {
    @Option(name: .customLong("webrtc-ports"), help: ArgumentHelp("The UDP ports WebRTC media may use, as MIN-MAX (default: any the system gives); open these in a firewall.", valueName: "min-max"))
    var ports: UDPPortRange?

    @Option(name: .customLong("stun-server"), help: ArgumentHelp("A STUN server that tells WebRTC viewers behind NAT the service's public address: stun://HOST:PORT. Not needed on a LAN.", valueName: "url"))
    var stunServer: String?

    @Option(name: .customLong("turn-server"), help: ArgumentHelp("A TURN server that relays WebRTC media where no direct path exists: turn://USER:PASSWORD@HOST:PORT (or turns://); repeatable.", valueName: "url"))
    var turnServers: [String] = []

    @Flag(name: .customLong("no-webrtc"), help: "Serve no WebRTC (WHEP): the page shows MJPEG, and POST /devices/ID/whep answers 503.")
    var disabled = false

    func validate() throws {
        if let stunServer, !stunServer.hasPrefix("stun://") {
            throw ValidationError("--stun-server \(stunServer) is not a STUN URL; give stun://HOST:PORT")
        }
        for turn in turnServers where !(turn.hasPrefix("turn://") || turn.hasPrefix("turns://")) || !turn.contains("@") {
            throw ValidationError("--turn-server \(turn) is not a TURN URL; give turn://USER:PASSWORD@HOST:PORT or turns://…")
        }
    }
}

/// MIN-MAX: UDP ports, MIN ≤ MAX, both from 1024 to 65535.
struct UDPPortRange: ExpressibleByArgument, Sendable {
    let range: ClosedRange<Int>

    init?(argument: String) {
        let parts = argument.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let low = Int(parts[0]), let high = Int(parts[1]),
              (1024...65535).contains(low), (1024...65535).contains(high), low <= high else { return nil }
        range = low...high
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

/// How the service's WebRTC peers are made, from `serve`'s options.
package struct WebRTCSettings: Sendable {
    /// Whether WHEP is served at all.
    package var enabled = true
    package var ports: ClosedRange<Int>?
    package var stunServer: String?
    package var turnServers: [String] = []
    /// The addresses ICE gathers on: the listener's, or none for every address.
    package var localAddresses: [String] = []
    /// How long an answer waits for ICE candidates (a STUN or TURN server takes longer than a LAN).
    package var gatheringTimeoutMilliseconds = 1000

    package init(enabled: Bool = true, ports: ClosedRange<Int>? = nil, stunServer: String? = nil, turnServers: [String] = [],
                 localAddresses: [String] = []) {
        self.enabled = enabled
        self.ports = ports
        self.stunServer = stunServer
        self.turnServers = turnServers
        self.localAddresses = localAddresses
        if stunServer != nil || !turnServers.isEmpty { gatheringTimeoutMilliseconds = 3000 }
    }

    init(options: WebRTCOptions, listen: ListenAddress) {
        // 0.0.0.0 and :: listen everywhere: candidates from every address then.
        let everywhere = listen.host == "0.0.0.0" || listen.host == "::"
        self.init(enabled: !options.disabled, ports: options.ports?.range, stunServer: options.stunServer,
                  turnServers: options.turnServers, localAddresses: everywhere ? [] : [listen.host])
    }
}
