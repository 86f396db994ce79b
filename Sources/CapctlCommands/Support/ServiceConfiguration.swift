import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What `capctl serve` was asked for, checked: the devices to open, where to
/// listen, the folder, the token and the limits.
package struct ServiceConfiguration: Sendable {
    /// The cameras, in the order given, each with what it is asked for.
    var cameras: [CaptureInputs.Camera]
    var microphones: [String]
    var audioRequest: CaptureAudioRequest
    var holdsConfigurationLock: Bool
    /// The address to listen on (numeric) and its port (0: any free one).
    package let host: String
    package let port: Int
    /// The recordings folder, as an absolute path with no symbolic link in it.
    package let folder: String
    /// The token of --token-file, if any: an `admin` credential.
    package let token: String?
    /// --access-file and --link-key-file, if given.
    package let accessFilePath: String?
    package let linkKeyPath: String?
    /// The certificate chain and key of --tls-cert and --tls-key (PEM files): HTTPS when given.
    package let tls: (certificatePath: String, keyPath: String)?
    /// What to change in the access file instead of serving, if anything.
    package let accessFileChange: AccessFileChange?
    /// Whether requests need a credential.
    package var requiresCredentials: Bool { token != nil || accessFilePath != nil }
    /// Whether other machines can reach the listener.
    package var isReachableFromOtherMachines: Bool { !(host.hasPrefix("127.") || host == "::1") }
    /// Host names besides the listener's address and localhost that requests may name.
    package let allowedHosts: [String]
    /// The address as --listen gives it.
    package var listenDescription: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    /// Where the access log goes: a file, or stderr when nil.
    package let accessLogPath: String?
    package let maxRecordings: Int
    /// Live-view viewers at once, at most.
    package let maxViewers: Int
    /// How WHEP viewers' peers are made.
    package let webRTC: WebRTCSettings
    /// The largest request body taken, in bytes.
    package let maxBodySize = 64 * 1024

    init(command: Capctl.Serve) throws {
        let shared = command.capture.request
        cameras = command.video.map { ($0.device.specifier, $0.request(over: shared), $0.overlay(over: command.overlay)) }
        microphones = command.audio.map(\.specifier)
        if cameras.isEmpty && microphones.isEmpty { cameras = [("video:0", shared, command.overlay.shared)] }
        audioRequest = command.audioCapture.request
        holdsConfigurationLock = !command.noLock
        host = command.listen.host
        port = command.listen.port
        allowedHosts = command.allowHost.map { $0.lowercased() }
        accessLogPath = command.accessLog
        maxRecordings = command.maxRecordings
        maxViewers = command.maxViewers
        accessFilePath = command.access.accessFile
        linkKeyPath = command.access.linkKeyFile
        tls = command.access.tlsCert.flatMap { certificate in command.access.tlsKey.map { (certificate, $0) } }
        accessFileChange = command.access.change
        // A credential action changes a file and exits: it writes no recording, and may run anywhere.
        folder = accessFileChange == nil ? try Self.folder(command.dir) : command.dir
        token = try command.tokenFile.map(Self.token)
        if accessFileChange == nil {
            try Self.keepOutOfFolder(folder, [("--token-file", command.tokenFile), ("--access-file", accessFilePath),
                                              ("--link-key-file", linkKeyPath), ("--tls-key", command.access.tlsKey)])
        }
        webRTC = WebRTCSettings(options: command.webRTC, listen: command.listen)
    }

    /// The folder, resolved: it must exist and be writable.
    private static func folder(_ path: String) throws -> String {
        let folder: String
        do throws(SystemCallError) {
            folder = try Posix.realpath(path)
        } catch {
            throw CommandFailure("--dir \(path): \(error.reason)", status: .cannotCreate)
        }
        guard let info = try? Posix.stat(folder), (info.st_mode & S_IFMT) == S_IFDIR else {
            throw CommandFailure("--dir \(path): not a folder", status: .cannotCreate)
        }
        do throws(SystemCallError) {
            try Posix.access(folder, W_OK)
        } catch {
            throw CommandFailure("--dir \(path): not writable (\(error.reason))", status: .cannotCreate)
        }
        return folder
    }

    /// Refuses a file of secrets inside the folder, whose files the service serves to a `record` credential.
    private static func keepOutOfFolder(_ folder: String, _ files: [(option: String, path: String?)]) throws {
        for (option, path) in files {
            guard let path else { continue }
            // The file may not exist yet (a link key made at start): its folder, resolved, and its name.
            let slash = path.lastIndex(of: "/")
            let parent = slash.map { String(path[..<$0]) } ?? "."
            let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
            guard let resolved = try? Posix.realpath(parent.isEmpty ? "/" : parent) else { continue }
            let full = (resolved == "/" ? "" : resolved) + "/" + name
            if full.hasPrefix(folder == "/" ? "/" : folder + "/") {
                throw CommandFailure("\(option) \(path) is inside --dir \(folder), whose files the service serves: keep it elsewhere, such as /var/lib/capctl beside the recordings folder",
                                     status: .usage)
            }
        }
    }

    /// The token in `path`: a file only its owner can read (mode 0600 or
    /// stricter), holding one line of at least 16 characters.
    private static func token(_ path: String) throws -> String {
        guard let bytes = try PrivateFile.read(path, option: "--token-file") else {
            throw CommandFailure("--token-file \(path): \(SystemCallError(call: "open", errno: ENOENT).reason)", status: .noInput)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let token = String(text.split(whereSeparator: \.isNewline).first ?? "").trimmingWhitespace()
        guard token.count >= 16, token.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\"" }) else {
            throw CommandFailure("--token-file \(path): the token must be one line of at least 16 printable characters, such as the output of 'openssl rand -hex 32'",
                                 status: .usage)
        }
        return token
    }

    /// The devices, opened as `record` opens them.
    package func openInputs() throws -> [CaptureInput] {
        try CaptureInputs.open(cameras: cameras, microphones: microphones, audioRequest: audioRequest, realtime: true,
                               locksConfiguration: holdsConfigurationLock)
    }
}
