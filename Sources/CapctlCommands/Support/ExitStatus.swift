import ArgumentParser
import CaptureKit

/// capctl's exit statuses, after sysexits(3). Each is documented in the
/// README and in the man page (from `Capctl.exitStatusHelp`); scripts rely on them.
package enum ExitStatus: Int32, CaseIterable {
    case success = 0
    /// Something failed that has no more specific status.
    case failure = 1
    /// Bad command line: unknown option, malformed or out-of-range value.
    case usage = 64
    /// The input is not what it should be: not a capture device, or a file
    /// that is corrupt, truncated or not a media file.
    case dataError = 65
    /// No such device or input file.
    case noInput = 66
    /// The device is busy or unavailable.
    case unavailable = 69
    /// An internal error in capctl.
    case software = 70
    /// The output file cannot be created: it exists, or its directory is missing or not writable.
    case cannotCreate = 73
    /// A read or write failed, or the disk is full.
    case ioError = 74
    /// The request is valid but cannot be met now (such as a torch level above what is currently available).
    case temporaryFailure = 75
    /// Permission denied on a device or file.
    case noPermission = 77

    /// One line each, for `--help`, the man page and the README.
    static var helpText: String {
        """
        EXIT STATUS
          0   success (also when a recording is stopped by the user or by a limit)
          1   failure with no more specific status
          64  usage error: unknown option, malformed or out-of-range value
          65  not a capture device, or an input file that is corrupt or not a media file
          66  no such device or input file
          69  device busy or unavailable
          70  internal error
          73  cannot create the output file (exists, directory missing or not writable)
          74  read or write error, disk full
          75  valid request that cannot be met now (torch level above what is available)
          77  permission denied on a device or file
        """
    }
}

/// A failure to report as one line on stderr with a given exit status.
package struct CommandFailure: Error, CustomStringConvertible {
    package let message: String
    package let status: ExitStatus

    package init(_ message: String, status: ExitStatus) {
        self.message = message
        self.status = status
    }

    package var description: String { message }
}

extension CommandFailure {
    /// The status and message for a device error.
    init(_ error: DeviceError) {
        switch error {
        case .noSuchDevice: self.init(error.description, status: .noInput)
        case .notACaptureDevice: self.init(error.description, status: .dataError)
        case .permissionDenied: self.init(error.description, status: .noPermission)
        case .busy: self.init(error.description, status: .unavailable)
        case .ioFailure: self.init(error.description, status: .ioError)
        }
    }
}
