#if canImport(Glibc)
import Glibc
#endif

/// Something that happened to a capture device: the counterparts of
/// AVCaptureDevice's connected and disconnected notifications, of observing
/// its properties, and of subject-area-change monitoring.
package enum DeviceEvent: Sendable, Hashable {
    /// A capture device appeared (its /dev node was created and it answers).
    case connected(path: String, name: String, mediaType: MediaType, uniqueID: String)
    /// A capture device went away: its node was removed, or the driver
    /// reported it gone (a USB camera unplugged, vivid's disconnect).
    case disconnected(path: String, name: String, mediaType: MediaType)
    /// A control changed value, flags or range (another program set it, or
    /// an automatic mode moved it).
    case controlChanged(ControlChange)
    /// The video source changed (resolution or signal); `changes` holds
    /// "resolution" where the driver says so.
    case sourceChanged(path: String, name: String, input: UInt32, changes: [String])
}

/// A V4L2 control event, described with the control's name and meaning.
package struct ControlChange: Sendable, Hashable {
    package let path: String
    /// The device's name.
    package let device: String
    /// The control's v4l2-ctl name.
    package let control: String
    package let id: UInt32
    package let value: Int64
    /// The value's meaning: a menu entry's name, on/off.
    package let valueText: String?
    /// What changed: "value", "flags", "range".
    package let changes: [String]
    /// The control's flags now ("inactive", "read-only" …).
    package let flags: [String]
}

/// Why monitoring could not start or go on.
package enum MonitorError: Error, Sendable, Equatable, CustomStringConvertible {
    case failed(SystemCallError)

    package var description: String {
        switch self {
        case .failed(let error): return "monitoring failed: \(error)"
        }
    }
}

/// Watches capture devices until told to stop: /dev for nodes arriving and
/// leaving (inotify; no udev needed), and each camera for control and source
/// events (VIDIOC_SUBSCRIBE_EVENT) and for the driver dropping it (POLLHUP).
package final class DeviceMonitor {
    package let discovery: DeviceDiscovery
    private var inotify: Int32 = -1
    private var soundWatch: Int32 = -1
    private var devWatch: Int32 = -1
    private var cameras: [String: WatchedCamera] = [:]
    /// Devices reported present, by path, with their names.
    private var present: [String: (name: String, mediaType: MediaType)] = [:]
    /// New nodes not yet answering (udev may not have set their permissions): path → deadline.
    private var pending: [String: Double] = [:]
    private let clock = MonotonicControlClock()

    /// How long a new node is retried before it is given up on.
    package var settleTimeout: Double = 3
    /// How often cameras are asked whether they are still there.
    package var livenessInterval: Double = 1
    private var lastLivenessCheck: Double = 0
    /// Cameras the driver dropped whose node remained: they may come back.
    private var dropped = Set<String>()

    package init(discovery: DeviceDiscovery = DeviceDiscovery()) {
        self.discovery = discovery
    }

    deinit {
        if inotify >= 0 { try? Posix.close(inotify) }
    }

    /// Starts watching: answers the capture devices present now.
    @discardableResult
    package func start() throws(MonitorError) -> [CaptureDevice] {
        do {
            inotify = try Posix.inotifyInit(flags: Int32(IN_NONBLOCK | IN_CLOEXEC))
            let mask = UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)
            let root = discovery.devRoot
            devWatch = try Posix.inotifyAddWatch(inotify, root, mask: mask)
        } catch {
            throw .failed(error)
        }
        watchSoundDirectory()
        let devices = discovery.devices()
        for device in devices {
            present[device.path] = (device.localizedName, device.mediaType)
            if device.mediaType == .video, case .authorized = device.access {
                cameras[device.path] = WatchedCamera(device: device, discovery: discovery)
            }
        }
        return devices
    }

    /// The cameras whose control events are watched.
    package var watchedCameras: [String] { cameras.keys.sorted() }

    /// Delivers events to `handler` until `stopDescriptor` becomes readable
    /// (a self-pipe written by a signal handler) or, without one, forever.
    package func run(stopDescriptor: Int32? = nil, handler: (DeviceEvent) -> Void) throws(MonitorError) {
        if inotify < 0 { try start() }
        while true {
            var targets: [pollfd] = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)]
            if let stopDescriptor { targets.append(pollfd(fd: stopDescriptor, events: Int16(POLLIN), revents: 0)) }
            let watched = cameras.values.sorted { $0.path < $1.path }
            for camera in watched {
                let target = camera.controls.node.eventPollTarget
                targets.append(pollfd(fd: target.descriptor, events: target.events, revents: 0))
            }
            // Some drivers drop a device without waking pollers (vivid's
            // disconnect): a periodic look catches those within a second.
            let timeout: Int32 = pending.isEmpty ? Int32(livenessInterval * 1000) : 100
            do {
                try Posix.poll(&targets, timeout: timeout)
            } catch {
                throw .failed(error)
            }
            if let stopDescriptor, targets[1].revents != 0, stopDescriptor >= 0 { return }
            let offset = stopDescriptor == nil ? 1 : 2
            let lookAtAll = clock.now() - lastLivenessCheck >= livenessInterval
            if lookAtAll { lastLivenessCheck = clock.now() }
            for (index, camera) in watched.enumerated() {
                let revents = targets[offset + index].revents
                guard revents != 0 || lookAtAll else { continue }
                camera.drain(handler)
                if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 || camera.isGone {
                    cameras[camera.path] = nil
                    if present.removeValue(forKey: camera.path) != nil {
                        handler(.disconnected(path: camera.path, name: camera.name, mediaType: .video))
                    }
                    // The node may stay and the device come back on it (a
                    // driver that re-registers): keep looking.
                    dropped.insert(camera.path)
                }
            }
            if lookAtAll { lookForReturns(handler) }
            if targets[0].revents != 0 { readNotifications(handler) }
            retryPending(handler)
        }
    }

    // MARK: Nodes arriving and leaving

    private func watchSoundDirectory() {
        guard soundWatch < 0 else { return }
        let path = "\(discovery.devRoot)/snd"
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)
        if let watch = try? Posix.inotifyAddWatch(inotify, path, mask: mask) { soundWatch = watch }
    }

    private func readNotifications(_ handler: (DeviceEvent) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            // EAGAIN (the descriptor is non-blocking) once every event was read.
            let count = (try? Posix.read(inotify, into: &buffer)) ?? 0
            guard count > 0 else { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (watch, mask, length) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, event.mask, Int(event.len))
                }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let nameBytes = buffer[nameStart..<min(nameStart + length, count)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                offset = nameStart + length
                handleNotification(watch: watch, mask: mask, name: name, handler)
            }
        }
    }

    private func handleNotification(watch: Int32, mask: UInt32, name: String, _ handler: (DeviceEvent) -> Void) {
        let created = mask & UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB) != 0
        let removed = mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0
        if watch == devWatch {
            if name == "snd", created {
                watchSoundDirectory()
                return
            }
            guard name.hasPrefix("video"), Int(name.dropFirst(5)) != nil else { return }
            let path = "\(discovery.devRoot)/\(name)"
            if removed {
                pending[path] = nil
                deviceRemoved(path, handler)
            } else if created, present[path] == nil {
                dropped.remove(path)
                pending[path] = clock.now() + settleTimeout
                retryPending(handler)
            }
        } else if watch == soundWatch {
            guard let (card, device) = captureNode(name) else { return }
            let path = "audio-node:\(card),\(device)"
            if removed {
                pending[path] = nil
                if let known = present.first(where: { $0.value.mediaType == .audio && isPCM($0.key, card: card, device: device) }) {
                    present[known.key] = nil
                    handler(.disconnected(path: known.key, name: known.value.name, mediaType: .audio))
                }
            } else if created, !present.contains(where: { isPCM($0.key, card: card, device: device) }) {
                pending[path] = clock.now() + settleTimeout
                retryPending(handler)
            }
        }
    }

    /// Dropped cameras that answer again are connected anew.
    private func lookForReturns(_ handler: (DeviceEvent) -> Void) {
        for path in dropped.sorted() {
            guard Posix.isAccessible(path) else {
                dropped.remove(path)
                continue
            }
            guard let device = try? discovery.resolve(path, expecting: .video),
                  let camera = WatchedCamera(device: device, discovery: discovery) else { continue }
            dropped.remove(path)
            present[path] = (device.localizedName, .video)
            cameras[path] = camera
            handler(.connected(path: path, name: device.localizedName, mediaType: .video, uniqueID: device.uniqueID))
        }
    }

    private func deviceRemoved(_ path: String, _ handler: (DeviceEvent) -> Void) {
        dropped.remove(path)
        let camera = cameras.removeValue(forKey: path)
        if let known = present.removeValue(forKey: path) {
            handler(.disconnected(path: path, name: camera?.name ?? known.name, mediaType: known.mediaType))
        }
    }

    /// Probes new nodes; those that answer are reported, the others tried
    /// again until their deadline.
    private func retryPending(_ handler: (DeviceEvent) -> Void) {
        let now = clock.now()
        for (path, deadline) in pending {
            if path.hasPrefix("audio-node:") {
                let numbers = path.dropFirst("audio-node:".count).split(separator: ",").compactMap { Int32($0) }
                if numbers.count == 2, let device = discovery.devices(for: .audio).first(where: { isPCM($0.path, card: numbers[0], device: numbers[1]) }) {
                    pending[path] = nil
                    if present[device.path] == nil {
                        present[device.path] = (device.localizedName, .audio)
                        handler(.connected(path: device.path, name: device.localizedName, mediaType: .audio, uniqueID: device.uniqueID))
                    }
                } else if now >= deadline {
                    pending[path] = nil
                }
                continue
            }
            do {
                let device = try discovery.resolve(path, expecting: .video)
                pending[path] = nil
                present[path] = (device.localizedName, .video)
                cameras[path] = WatchedCamera(device: device, discovery: discovery)
                handler(.connected(path: path, name: device.localizedName, mediaType: .video, uniqueID: device.uniqueID))
            } catch .notACaptureDevice {
                // An output, metadata or other node: not a camera.
                pending[path] = nil
            } catch {
                if now >= deadline { pending[path] = nil }
            }
        }
    }

    /// `pcmC1D0c` → (1, 0): capture PCM nodes only.
    private func captureNode(_ name: String) -> (Int32, Int32)? {
        guard name.hasPrefix("pcmC"), name.hasSuffix("c"), let d = name.firstIndex(of: "D") else { return nil }
        guard let card = Int32(name[name.index(name.startIndex, offsetBy: 4)..<d]),
              let device = Int32(name[name.index(after: d)..<name.index(before: name.endIndex)]) else { return nil }
        return (card, device)
    }

    /// Whether the ALSA name `path` (`hw:CARD,DEV`) is capture PCM `card`,`device`.
    private func isPCM(_ path: String, card: Int32, device: Int32) -> Bool {
        guard let numbers = alsaNumbers(path) else { return false }
        return numbers.0 == card && numbers.1 == device
    }

    /// The card and device numbers of `hw:CARD,DEV` when CARD is numeric;
    /// by card ID through ALSA otherwise.
    private func alsaNumbers(_ path: String) -> (Int32, Int32)? {
        guard path.hasPrefix("hw:") else { return nil }
        let parts = path.dropFirst(3).split(separator: ",")
        guard parts.count == 2, let device = Int32(parts[1]) else { return nil }
        if let card = Int32(parts[0]) { return (card, device) }
        guard let card = discovery.alsa.captureDevices().first(where: { $0.cardID == String(parts[0]) })?.cardIndex else { return nil }
        return (card, device)
    }
}

/// One camera whose events are subscribed to.
final class WatchedCamera {
    let path: String
    let name: String
    let controls: DeviceControls
    /// The controls by ID, for names and menus.
    var known: [UInt32: DeviceControl] = [:]
    private(set) var isGone = false

    init?(device: CaptureDevice, discovery: DeviceDiscovery) {
        guard let controls = try? DeviceControls.open(device.path, interface: discovery.v4l2) else { return nil }
        self.path = device.path
        self.name = device.localizedName
        self.controls = controls
        for control in (try? controls.allControls()) ?? [] {
            known[control.id] = control
            if control.type != .controlClass {
                try? controls.node.subscribe(.control(control.id))
            }
        }
        try? controls.node.subscribe(.sourceChange())
    }

    /// Dequeues every pending event.
    func drain(_ handler: (DeviceEvent) -> Void) {
        while true {
            let event: V4L2Event?
            do {
                event = try controls.node.dequeueEvent()
            } catch where error.errno == ENODEV {
                isGone = true
                return
            } catch {
                return
            }
            guard let event else { return }
            switch event {
            case .control(let id, let changes, let value, let flags, _, _, _, _):
                let control = known[id]
                var changed: [String] = []
                if changes & V4L2Event.valueChanged != 0 { changed.append("value") }
                if changes & V4L2Event.flagsChanged != 0 { changed.append("flags") }
                if changes & V4L2Event.rangeChanged != 0 { changed.append("range") }
                let text: String? = control.flatMap { control in
                    switch control.type {
                    case .menu?, .integerMenu?, .boolean?: return control.describe(.integer(value))
                    default: return nil
                    }
                }
                handler(.controlChanged(ControlChange(
                    path: path, device: name, control: control?.name ?? format0x(id), id: id, value: value, valueText: text,
                    changes: changed, flags: V4L2ControlFlags(rawValue: flags).names)))
            case .sourceChange(let input, let changes):
                handler(.sourceChanged(path: path, name: name, input: input, changes: changes & V4L2Event.resolutionChanged != 0 ? ["resolution"] : []))
            case .other:
                continue
            }
        }
    }
}
