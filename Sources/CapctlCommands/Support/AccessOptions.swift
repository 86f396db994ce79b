import ArgumentParser

/// `serve`'s access options: who may do what (the access file and its credentials,
/// view links), and HTTPS. The credential actions change the access file and exit
/// without opening any device.
struct AccessOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A file (mode 0600) of credentials, each with a role (view, record, control, admin) and the cameras it covers, kept as hashes; --add-credential makes it.", valueName: "file"))
    var accessFile: String?

    @Option(name: .long, help: ArgumentHelp("The file (mode 0600) holding the key view links are signed with, made when missing; without it links end when the service stops.", valueName: "file"))
    var linkKeyFile: String?

    @Option(name: .long, help: ArgumentHelp("Serve HTTPS (HTTP/2 and HTTP/1.1) with this certificate chain (PEM); read again on SIGHUP.", valueName: "file"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("The private key (PEM) of --tls-cert; read again on SIGHUP.", valueName: "file"))
    var tlsKey: String?

    @Option(name: .long, help: ArgumentHelp("Add a credential of this name to --access-file, print its secret once, and exit.", valueName: "name"))
    var addCredential: String?

    @Option(name: .long, help: ArgumentHelp("The new credential's role: view, record, control or admin.", valueName: "role"))
    var role: AccessRole?

    @Option(name: .long, help: ArgumentHelp("A camera (device id, as GET /devices lists it) the new credential covers; repeatable; default every camera.", valueName: "id"))
    var credentialCamera: [String] = []

    @Option(name: .long, help: ArgumentHelp("Remove the credential of this name from --access-file and exit (a running service drops it on SIGHUP).", valueName: "name"))
    var removeCredential: String?

    @Flag(name: .long, help: "List --access-file's credentials (names, roles, cameras; no secret) and exit.")
    var listCredentials = false

    @Flag(name: .long, help: "Write a new key to --link-key-file and exit; every view link ends once the service reads it (SIGHUP or restart).")
    var rotateLinkKey = false

    /// The access-file action asked for, if any.
    var change: AccessFileChange? {
        if let addCredential { return .add(name: addCredential, role: role ?? .view, cameras: credentialCamera.isEmpty ? nil : credentialCamera) }
        if let removeCredential { return .remove(name: removeCredential) }
        if listCredentials { return .list }
        if rotateLinkKey { return .rotateLinkKey }
        return nil
    }

    func validate(listen: ListenAddress, tokenFile: String?) throws {
        let actions = [addCredential != nil, removeCredential != nil, listCredentials, rotateLinkKey].filter { $0 }.count
        if actions > 1 {
            throw ValidationError("--add-credential, --remove-credential, --list-credentials and --rotate-link-key each change or show one thing; give one at a time")
        }
        if (addCredential != nil || removeCredential != nil || listCredentials) && accessFile == nil {
            throw ValidationError("the credentials are kept in --access-file FILE; name it (it is made, mode 0600, when missing)")
        }
        if rotateLinkKey && linkKeyFile == nil {
            throw ValidationError("--rotate-link-key writes --link-key-file FILE; name the file the service reads its key from")
        }
        if addCredential != nil && role == nil {
            throw ValidationError("--add-credential needs --role view, record, control or admin")
        }
        for camera in credentialCamera where Int(camera).map({ $0 < 0 || String($0) != camera }) ?? true {
            throw ValidationError("--credential-camera \(camera) is not a device id; give a number GET /devices lists, such as 0")
        }
        if addCredential == nil && (role != nil || !credentialCamera.isEmpty) {
            throw ValidationError("--role and --credential-camera describe the credential --add-credential NAME makes; add that option")
        }
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("HTTPS needs both --tls-cert FILE and --tls-key FILE (PEM)")
        }
        if change == nil && !listen.isLoopback && tokenFile == nil && accessFile == nil {
            throw ValidationError("--listen \(listen) is reachable from other machines: give --access-file FILE (credentials with roles) or --token-file FILE (mode 0600), or listen on 127.0.0.1")
        }
    }
}

/// A change to the access file (or the link key) that `serve` makes instead of serving.
package enum AccessFileChange: Sendable, Equatable {
    case add(name: String, role: AccessRole, cameras: [String]?)
    case remove(name: String)
    case list
    case rotateLinkKey
}
