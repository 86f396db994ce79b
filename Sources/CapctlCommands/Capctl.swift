import ArgumentParser
import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

/// The `capctl` command: parses a subcommand and hands it to CaptureKit.
package struct Capctl: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "capctl",
        abstract: "Record and stream from cameras and microphones, take photos, and inspect devices and files.",
        discussion: """
        capctl records video and audio from V4L2 cameras and ALSA microphones to MP4, MOV, \
        MKV, WebM or MPEG-TS files (audio alone to WAV, FLAC, M4A, Ogg or Opus), and streams \
        it to media servers over RTMP, SRT, RTSP or UDP while recording (record); it keeps \
        devices open and takes recordings, markers, photos and settings over HTTP (serve). It takes \
        photos (snap); lists devices and the formats they offer (list-devices, formats); shows \
        and sets camera controls and the torch (controls, set, set-torch); reports devices \
        coming and going (monitor); and shows what a media file holds, repairs a recording \
        that was cut off, and saves frames from one (info, repair, frame).

        DEVICES
          Wherever a command takes a device, it accepts the device node or ALSA name \
        (/dev/video0, hw:Loopback,1), its unique ID as 'capctl list-devices' prints it, \
        video:N / audio:N, the N-th device of that kind in the list (counting from 0), or a \
        virtual device: test-pattern, test-tone[:HZ][,level=DBFS][,delay=TIME], file:PATH.

        OUTPUT
          Results go to stdout, diagnostics to stderr as one line each. With --json, \
        commands print one JSON document whose field names are stable.

        \(ExitStatus.helpText)
        """,
        version: "0.1.0",
        // Every command states its commandName: without one, ArgumentParser derives it
        // from the type's name through String(describing:), whose dynamic casts scan
        // every protocol conformance in the binary, at every start, for each command.
        subcommands: [ListDevices.self, Formats.self, Record.self, Serve.self, Controls.self, SetControls.self, SetTorch.self, Monitor.self, Info.self, Repair.self, Frame.self, Snap.self]
    )

    package init() {}

    /// Runs the command line. Failures print one line on stderr and exit with
    /// the documented status; help and version requests print as usual.
    /// With `host` (in capctl-serve), `serve` runs its server through it, in this process.
    static func main(host: (any ServiceHost)? = nil) {
        do {
            var command = try parseAsRoot()
            if let serve = command as? Serve, let host {
                let status = try host.run(ServiceConfiguration(command: serve))
                if status != .success { throw ExitCode(status.rawValue) }
                return
            }
            try command.run()
        } catch let failure as CommandFailure {
            Diagnostics.error(failure.message)
            Glibc.exit(failure.status.rawValue)
        } catch let error as DeviceError {
            let failure = CommandFailure(error)
            Diagnostics.error(failure.message)
            Glibc.exit(failure.status.rawValue)
        } catch let status as ExitCode {
            // A command that has already said why (record's summary): only the status.
            Glibc.exit(status.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success || error is CleanExit {
                exit(withError: error)
            }
            // Parsing and validation errors: one line naming the problem and
            // where to look, instead of the full usage text.
            let message = oneLine(self.message(for: error)) ?? "\(error)"
            let stripped = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
            Diagnostics.error("\(stripped) (see 'capctl help')")
            Glibc.exit(code.rawValue == ExitCode.validationFailure.rawValue ? ExitStatus.usage.rawValue : code.rawValue)
        }
    }

    /// The first line of a parser message; a list that follows a line ending
    /// in ':' (the values an option accepts) is joined onto it.
    package static func oneLine(_ message: String) -> String? {
        let lines = message.split(whereSeparator: \.isNewline).map { String($0.drop { $0 == " " }) }
        guard let first = lines.first else { return nil }
        guard first.hasSuffix(":") else { return first }
        let items = lines.dropFirst().prefix { $0.hasPrefix("- ") }.map { String($0.dropFirst(2)) }
        return items.isEmpty ? first : first + " " + items.joined(separator: ", ")
    }
}
