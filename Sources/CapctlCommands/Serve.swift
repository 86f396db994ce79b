import ArgumentParser
import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

extension Capctl {
    /// `capctl serve`: keeps the devices open and takes recordings, markers,
    /// photos and camera settings over HTTP. Its server runs in capctl-serve,
    /// which this command starts with the same arguments.
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Keep cameras and microphones open and take requests over HTTP: recordings, markers, photos, controls.",
            discussion: """
            Opens the devices once (--video and --audio as for record; without either, the first \
            camera) and keeps the capture running, with each camera's configuration lock held, \
            until SIGINT or SIGTERM, which finish every recording as record does. Recordings, \
            markers, photos, camera controls and finished files are reached over HTTP, with JSON \
            bodies; the API is described by the OpenAPI document the service serves at \
            /openapi.json.

            API
              GET / is a page for a browser on a computer or a phone: live views, recordings with \
            their progress, markers, photos, torch, controls and files, as far as its credential's \
            role allows (served without a credential, which it asks for; /?link=LINK shows one \
            camera's view by a view link). GET /access: the request's credential, role, cameras \
            and the operations it allows. GET /devices, GET /session (inputs, formats, state, uptime, free space in --dir). \
            POST /recordings with record's settings as JSON: the keys are record's long options \
            in camelCase (maxDuration, videoCodec, segmentDuration, startPaused, preRoll, \
            resumeOn, stream and the others), values as on the command line or as numbers, and file, the \
            name template inside --dir: {"file": "door-%Y%m%d-%H%M%S.mp4", "maxDuration": "10m"}. \
            It answers {"id", "file", "requested"}. GET /recordings, GET /recordings/ID (its progress); POST \
            /recordings/ID/pause, /resume, /switch (next file), /stop; POST /recordings/ID/markers \
            {"title"} puts a chapter at the current media time. POST /photos takes snap's \
            settings ({"format", "quality", "count", "interval", "flash", "file", "camera"}) and \
            takes them from the running camera (the first, or camera, a device ID), also while \
            recordings run, which lose no frame: one photo without file is the answer itself \
            (image/jpeg, image/png, or application/octet-stream for raw, with X-Capture-Time, \
            X-Photo-Width and X-Photo-Height headers); with file, a name template such as \
            'shot-%3n.jpg', the photos are written inside --dir and listed (201); a burst needs \
            file. GET /devices/ID/controls answers what 'capctl controls DEV --json' prints; \
            PATCH /devices/ID/controls {"brightness": 10, "gain_automatic": false} sets them as \
            'capctl set' does (automatic-mode switches first), through the camera's configuration \
            lock the service holds, which keeps every other program out; POST /devices/ID/torch \
            {"on": true} or {"level": 0.5} as set-torch does. GET /files, GET /files/NAME (ranges), DELETE /files/NAME. GET \
            /events: every event as Server-Sent Events. GET /stream.mjpg?camera=ID&width=W&fps=F \
            (also height, quality): a camera's live view as MJPEG (multipart/x-mixed-replace) for \
            browsers, ffmpeg, VLC and OpenCV, encoded once per view while watched, a camera's own \
            MJPEG passed through at its size; a slow viewer misses pictures, never holds back \
            capture; GET /snapshot.jpg: its newest picture. POST /devices/ID/whep (WHEP) with a \
            WebRTC player's SDP offer (Content-Type: application/sdp) answers 201 with the SDP \
            answer and the viewer's resource in Location (DELETE /whep/VIEWER ends it): the \
            camera's H.264 from the encoder its recordings share, and the first microphone's \
            (?audio=ID, or none) Opus, encoded once for every viewer; media leaves from the \
            listening address only (--webrtc-ports, --stun-server, --turn-server; --no-webrtc \
            turns it off). GET /metrics answers the inputs', \
            recordings', streams' and live views' numbers in Prometheus's text format (0.0.4), \
            for an admin credential, under the same Host rules as every request (a scrape configuration \
            sends the secret with authorization: {credentials_file: FILE}).

            EVENTS
              stdout carries record's events as JSON lines (started, progress, paused, resumed, \
            segment, marker, finished and the others), each with recording, the recording's id; photo (snap's \
            didFinishProcessingPhoto fields, with camera) and photo-failed for each photo; the \
            service's own are service-started and service-stopped.

            OVERLAY
              --overlay TEXT (and a --video DEV,overlay=TEXT of its own) burns text into the \
            camera's frames as record does; it is the camera's, so every recording, stream, photo \
            and live view of it shows it, and POST /recordings refuses overlay and overlayPosition. One line per request goes to the \
            access log (stderr, or --access-log FILE).

            SECURITY
              The service listens on 127.0.0.1:8080 unless --listen says otherwise; any other \
            address needs credentials: --access-file, or --token-file. An access file (JSON, mode \
            0600) names credentials, each with a role and, if it is limited, the cameras it covers, \
            and keeps only the SHA-256 of each secret: 'capctl serve --access-file FILE \
            --add-credential NAME --role ROLE [--credential-camera ID]…' adds one and prints its \
            secret once (--remove-credential NAME, --list-credentials). Roles: view (live views, \
            view links, the page, the session, devices, events), record (also recordings, markers, \
            photos, files: list and download), control (also camera controls and the torch), admin \
            (everything, deleting files and the metrics included). A request sends its secret as \
            'Authorization: Bearer SECRET' (a GET may send access_token=SECRET in its query, which \
            the access log never holds); --token-file's token is one admin credential. Every \
            operation is checked against the role it needs and the camera it touches (the OpenAPI \
            document's x-capctl-role and x-capctl-cameras): no credential, an unknown one or a bad \
            link is 401, a role or camera that does not allow it 403, each counted in \
            capctl_http_refusals_total by reason. POST /view-links {"camera", "seconds"} answers a \
            link (?link=…) to one camera's live view that expires (at most 31 days), signed with \
            the key of --link-key-file (made when missing; without the option, a key that ends \
            with the service): it holds no secret, and 'capctl serve --link-key-file FILE \
            --rotate-link-key' then SIGHUP ends every link at once. --tls-cert and --tls-key (PEM) \
            serve HTTPS, HTTP/2 and HTTP/1.1 by ALPN; without them, credentials beyond loopback \
            travel in clear, which the service warns of. SIGHUP reads the access file, the link key \
            and the certificate again (service-reloaded, or reload-failed keeping what was in \
            force) while recordings and connections go on. Requests whose Host is neither an \
            address, localhost nor a name given with --allow-host are refused (DNS rebinding), and \
            so are requests that change something and carry an Origin other than the service's own \
            (a web page cannot steer it); no answer grants another origin (no CORS). Files are only \
            inside --dir: names are relative, with no '..', no symbolic link followed out of it, \
            and never an existing file overwritten. At most --max-recordings recordings run at \
            once; request bodies are at most 64 KiB.

            Exit status: 0 when stopped by a signal (or a credential action done); 69 when a \
            device is busy or the address is in use; 64 for options that cannot work (a \
            non-loopback address without credentials, a token or access file others can read); \
            65 for an access or link-key file that is not one; 66 for a certificate or key that \
            cannot be read.
            """
        )

        @Option(name: .long, help: ArgumentHelp("A camera to keep open, with its own options if it needs them: DEV[,size=WxH][,fps=N][,pixel-format=F][,overlay=TEXT] (overlay= last: it takes the rest); repeat for several cameras.", valueName: "device"))
        var video: [CameraArgument] = []

        @Option(name: .long, help: ArgumentHelp("A microphone to keep open; repeat for several.", valueName: "device"))
        var audio: [DeviceArgument] = []

        @OptionGroup var capture: VideoCaptureOptions

        @OptionGroup var audioCapture: AudioCaptureOptions

        @OptionGroup(title: "Overlay") var overlay: OverlayOptions

        @OptionGroup(title: "WebRTC") var webRTC: WebRTCOptions

        @OptionGroup(title: "Access and HTTPS") var access: AccessOptions

        @Option(name: .long, help: ArgumentHelp("The address and port to listen on (default 127.0.0.1:8080; port 0 picks a free one).", valueName: "addr:port"))
        var listen = ListenAddress(argument: "127.0.0.1:8080")!

        @Option(name: .long, help: ArgumentHelp("The folder recordings and photos are written to, and files served from (default: the current folder).", valueName: "folder"))
        var dir = "."

        @Option(name: .long, help: ArgumentHelp("A file (mode 0600) holding a token requests may send as 'Authorization: Bearer TOKEN', which has role admin.", valueName: "file"))
        var tokenFile: String?

        @Option(name: .long, help: ArgumentHelp("A host name requests may name in Host besides the listener's address and localhost (as a reverse proxy sends it); repeatable.", valueName: "name"))
        var allowHost: [String] = []

        @Option(name: .long, help: ArgumentHelp("Write the access log to this file instead of stderr.", valueName: "file"))
        var accessLog: String?

        @Option(name: .long, help: ArgumentHelp("Recordings at once, at most.", valueName: "n"))
        var maxRecordings = 8

        @Option(name: .long, help: ArgumentHelp("Live-view viewers (/stream.mjpg) at once, at most; more are refused with 503.", valueName: "n"))
        var maxViewers = 64

        @Flag(name: .long, help: "Do not hold the cameras' configuration lock (others may change their controls).")
        var noLock = false

        func validate() throws {
            try capture.validate()
            try audioCapture.validate()
            try webRTC.validate()
            for camera in video {
                if let problem = camera.problem { throw ValidationError("--video \(camera): \(problem)") }
            }
            try overlay.validate(cameras: video, copiesVideo: false)
            try access.validate(listen: listen, tokenFile: tokenFile)
            if dir.isEmpty { throw ValidationError("--dir needs a folder, such as /var/lib/capctl") }
            if !(1...64).contains(maxRecordings) {
                throw ValidationError("--max-recordings \(maxRecordings) is out of range; use 1 to 64")
            }
            if !(1...1024).contains(maxViewers) {
                throw ValidationError("--max-viewers \(maxViewers) is out of range; use 1 to 1024")
            }
            for host in allowHost where host.isEmpty || host.contains("/") || host.contains(" ") {
                throw ValidationError("--allow-host '\(host)' is not a host name, such as capture.example.org")
            }
        }

        /// In capctl, which has no server: starts capctl-serve in this process's place with
        /// the same command line, so that it parses what was checked here. (capctl-serve's
        /// entry point hands the parsed command to its `ServiceHost` instead.)
        func run() throws {
            try ServiceProcess.execute(arguments: Array(CommandLine.arguments.dropFirst()))
        }
    }
}

/// `--listen`'s value: an IPv4 or IPv6 address (in brackets) and a port.
struct ListenAddress: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let host: String
    let port: Int

    init?(argument: String) {
        let hostPart: Substring, portPart: Substring
        if argument.hasPrefix("[") {
            guard let close = argument.firstIndex(of: "]"), argument[argument.index(after: close)...].hasPrefix(":") else { return nil }
            hostPart = argument[argument.index(after: argument.startIndex)..<close]
            portPart = argument[argument.index(close, offsetBy: 2)...]
        } else {
            guard let colon = argument.lastIndex(of: ":"), !argument[..<colon].contains(":") else { return nil }
            hostPart = argument[..<colon]
            portPart = argument[argument.index(after: colon)...]
        }
        guard let port = Int(portPart), (0...65535).contains(port), Self.isAddress(String(hostPart)) else { return nil }
        host = String(hostPart)
        self.port = port
    }

    /// Numeric addresses only: a name would be looked up, and could change what it means.
    private static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// Whether only this machine can reach it (127.0.0.0/8 or ::1).
    var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    static var defaultValueDescription: String { "an address and port, such as 127.0.0.1:8080 or [::1]:8080" }
}
