import CapctlCommands

/// `capctl serve --add-credential`, `--remove-credential`, `--list-credentials` and
/// `--rotate-link-key`: the change made to the file, and what to print of it.
package enum AccessFileCommand {
    /// What the command prints: `output` on stdout (the new secret alone, for a script to
    /// take; or the list), `note` on stderr.
    package struct Report: Sendable {
        package var output: [String] = []
        package var note: String?
    }

    package static func run(_ change: AccessFileChange, accessFilePath: String?, linkKeyPath: String?) throws -> Report {
        switch change {
        case .add(let name, let role, let cameras):
            let path = try required(accessFilePath)
            var file = try AccessFile.load(path)
            let secret = try file.add(name: name, role: role, cameras: cameras)
            try file.save(path)
            let scope = cameras.map { "camera " + $0.sorted().joined(separator: ", ") } ?? "every camera"
            return Report(output: [secret],
                          note: "added credential \(name) (role \(role.rawValue), \(scope)) to \(path): its secret, above, is shown only now; a running service takes it on SIGHUP")
        case .remove(let name):
            let path = try required(accessFilePath)
            var file = try AccessFile.load(path)
            guard file.remove(name: name) else {
                throw CommandFailure("--remove-credential \(name): \(path) has no credential of that name (--list-credentials lists them)", status: .usage)
            }
            try file.save(path)
            return Report(note: "removed credential \(name) from \(path); a running service refuses it after SIGHUP")
        case .list:
            let file = try AccessFile.load(try required(accessFilePath))
            let lines = file.credentials.map { credential in
                [credential.name, credential.role.rawValue, credential.cameras?.joined(separator: ",") ?? "*", credential.created ?? "-"]
                    .joined(separator: "\t")
            }
            return Report(output: lines)
        case .rotateLinkKey:
            guard let path = linkKeyPath else { throw CommandFailure("--rotate-link-key needs --link-key-file FILE", status: .usage) }
            try AccessControl.rotateLinkKey(path)
            return Report(note: "wrote a new link key to \(path): every view link ends when the service reads it (SIGHUP or restart)")
        }
    }

    private static func required(_ path: String?) throws -> String {
        guard let path else { throw CommandFailure("the credentials are kept in --access-file FILE; name it", status: .usage) }
        return path
    }
}
