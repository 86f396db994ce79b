import ArgumentParser
import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

extension Capctl {
    /// `capctl monitor`: devices arriving and leaving, control and source changes.
    struct Monitor: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "monitor",
            abstract: "Report devices arriving and leaving, and control and source changes, as they happen.",
            discussion: """
            Runs until interrupted (Ctrl-C or SIGTERM), then exits with status 0. The first \
            line lists the devices present when monitoring starts; after that, one line per \
            event, written at once:

              connected      a camera or microphone appeared (its /dev node was created and it answers)
              disconnected   it went away: its node was removed, or the driver dropped it
              control        a camera control changed value, flags or range: another program \
            set it, or an automatic mode moved it
              source         the camera's video source changed (resolution or signal)

            Hotplug is seen through /dev itself (inotify), so it works without udev; control and \
            source changes are V4L2 events, which every camera's driver sends to listeners other \
            than the program making the change.

            With --json, each line is a JSON object with an 'event' field (monitoring, connected, \
            disconnected, control, source) and a 'time' field (UTC, ISO 8601 with milliseconds). \
            connected and disconnected carry path, name and mediaType (connected also uniqueID); \
            control carries path, device, control, id, value, valueText (menu entry or on/off, \
            else null), changes (value, flags, range) and flags; source carries path, device, \
            input and changes.
            """
        )

        @OptionGroup var output: OutputOptions

        func run() throws {
            let interrupt = try InterruptSignal.pipe()
            defer { interrupt.close() }
            let monitor = DeviceMonitor()
            let present: [CaptureDevice]
            do {
                present = try monitor.start()
            } catch {
                throw CommandFailure(error.description, status: .ioError)
            }
            let watched = Set(monitor.watchedCameras)
            emit(MonitoringStarted(devices: present.map { device in
                MonitoringStarted.Device(path: device.path, name: device.localizedName, mediaType: device.mediaType.rawValue,
                                         watchingControls: watched.contains(device.path))
            }), text: "monitoring " + (present.isEmpty ? "(no devices yet)" : present.map { "\($0.path) (\($0.localizedName))" }.joined(separator: ", ")) + "; Ctrl-C to stop")
            do {
                try monitor.run(stopDescriptor: interrupt.readEnd) { event in
                    emit(event)
                }
            } catch {
                throw CommandFailure(error.description, status: .ioError)
            }
        }

        private func emit(_ event: DeviceEvent) {
            let time = EventTime.now()
            switch event {
            case .connected(let path, let name, let mediaType, let uniqueID):
                emit(DeviceEventJSON(event: "connected", time: time, path: path, name: name, mediaType: mediaType.rawValue, uniqueID: uniqueID),
                     text: "connected     \(path)  \(name)  (\(uniqueID))")
            case .disconnected(let path, let name, let mediaType):
                emit(DeviceEventJSON(event: "disconnected", time: time, path: path, name: name, mediaType: mediaType.rawValue, uniqueID: nil),
                     text: "disconnected  \(path)  \(name)")
            case .controlChanged(let change):
                let meaning = change.valueText.map { " (\($0))" } ?? ""
                let flags = change.changes.contains("flags") ? "  flags: \(change.flags.isEmpty ? "none" : change.flags.joined(separator: ","))" : ""
                let range = change.changes.contains("range") ? "  range changed" : ""
                emit(ControlEventJSON(change, time: time),
                     text: "control       \(change.path)  \(change.control) = \(change.value)\(meaning)\(flags)\(range)")
            case .sourceChanged(let path, let name, let input, let changes):
                emit(SourceEventJSON(time: time, path: path, device: name, input: input, changes: changes),
                     text: "source        \(path)  input \(input) changed\(changes.isEmpty ? "" : ": " + changes.joined(separator: ", "))")
            }
        }

        private func emit<T: Encodable>(_ value: T, text: String) {
            if output.json {
                try? JSONOutput.printLine(value)
            } else {
                print(text)
                fflush(nil)
            }
        }

    }
}

struct MonitoringStarted: Encodable {
    struct Device: Encodable {
        let path: String
        let name: String
        let mediaType: String
        /// Whether its control and source events are watched (cameras this user may open).
        let watchingControls: Bool
    }

    let event = "monitoring"
    let time = EventTime.now()
    let devices: [Device]
}

struct DeviceEventJSON: Encodable {
    let event: String
    let time: String
    let path: String
    let name: String
    let mediaType: String
    let uniqueID: String?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(event, forKey: .event)
        try container.encode(time, forKey: .time)
        try container.encode(path, forKey: .path)
        try container.encode(name, forKey: .name)
        try container.encode(mediaType, forKey: .mediaType)
        if let uniqueID { try container.encode(uniqueID, forKey: .uniqueID) }
    }

    enum Keys: String, CodingKey { case event, time, path, name, mediaType, uniqueID }
}

struct ControlEventJSON: Encodable {
    let event = "control"
    let time: String
    let path: String
    let device: String
    let control: String
    let id: UInt32
    let value: Int64
    let valueText: String?
    let changes: [String]
    let flags: [String]

    init(_ change: ControlChange, time: String) {
        self.time = time
        path = change.path
        device = change.device
        control = change.control
        id = change.id
        value = change.value
        valueText = change.valueText
        changes = change.changes
        flags = change.flags
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(event, forKey: .event)
        try container.encode(time, forKey: .time)
        try container.encode(path, forKey: .path)
        try container.encode(device, forKey: .device)
        try container.encode(control, forKey: .control)
        try container.encode(id, forKey: .id)
        try container.encode(value, forKey: .value)
        try container.encode(valueText, forKey: .valueText)
        try container.encode(changes, forKey: .changes)
        try container.encode(flags, forKey: .flags)
    }

    enum Keys: String, CodingKey { case event, time, path, device, control, id, value, valueText, changes, flags }
}

struct SourceEventJSON: Encodable {
    let event = "source"
    let time: String
    let path: String
    let device: String
    let input: UInt32
    let changes: [String]
}
