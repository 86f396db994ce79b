@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// The device monitor: /dev nodes arriving and leaving, control and source events.
struct DeviceMonitorTests {
    let tree: TemporaryTree
    let interface = FakeControlV4L2()

    init() throws {
        tree = try TemporaryTree()
        try tree.file("dev/.keep")
    }

    private var devRoot: String { "\(tree.root)/dev" }

    private func camera(_ name: String, _ camera: FakeCamera = FakeCameras.vivid()) throws {
        try tree.file("dev/\(name)")
        interface.cameras["\(devRoot)/\(name)"] = camera
    }

    private func monitor() -> DeviceMonitor {
        DeviceMonitor(discovery: DeviceDiscovery(v4l2: interface, alsa: FakeALSA(), devRoot: devRoot, sysfsRoot: "\(tree.root)/sys"))
    }

    /// Runs the monitor until `count` events arrived (or 5 seconds passed).
    private func events(_ monitor: DeviceMonitor, count: Int) throws -> [DeviceEvent] {
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        defer { close(ends[0]); close(ends[1]) }
        let stop = ends[1]
        let timer = try StopTimer(writingTo: stop, after: 5)
        defer { timer.cancel() }
        var seen: [DeviceEvent] = []
        try monitor.run(stopDescriptor: ends[0]) { event in
            seen.append(event)
            if seen.count == count {
                var byte: UInt8 = 1
                _ = write(stop, &byte, 1)
            }
        }
        return seen
    }

    @Test func startListsTheDevicesAndWatchesTheCameras() throws {
        try camera("video0")
        let monitor = monitor()
        let present = try monitor.start()
        #expect(present.filter { $0.mediaType == .video }.map(\.path) == ["\(devRoot)/video0"])
        #expect(monitor.watchedCameras == ["\(devRoot)/video0"])
    }

    @Test func aControlChangedByAnotherProgramIsReportedWithItsMeaning() throws {
        let fake = FakeCameras.full()
        try camera("video0", fake)
        let monitor = monitor()
        try monitor.start()
        let other = FakeControlHandle(camera: fake)
        _ = try other.setControlValue(id: 0x0098_0900, value: 60)
        _ = try other.setControlValue(id: ControlID.exposureAuto, value: 1)
        let seen = try events(monitor, count: 2)
        guard seen.count == 2, case .controlChanged(let brightness) = seen[0], case .controlChanged(let exposure) = seen[1] else {
            Issue.record("unexpected events: \(seen)")
            return
        }
        #expect(brightness.control == "brightness")
        #expect(brightness.value == 60)
        #expect(brightness.changes == ["value"])
        #expect(brightness.valueText == nil)
        #expect(exposure.control == "auto_exposure")
        #expect(exposure.valueText == "Manual Mode")
        #expect(exposure.path == "\(devRoot)/video0")
        #expect(exposure.device == "Fake Camera")
    }

    @Test func aSourceChangeIsReported() throws {
        let fake = FakeCameras.vivid()
        try camera("video0", fake)
        let monitor = monitor()
        try monitor.start()
        fake.sourceChange()
        let seen = try events(monitor, count: 1)
        #expect(seen == [.sourceChanged(path: "\(devRoot)/video0", name: "Fake Camera", input: 0, changes: ["resolution"])])
    }

    @Test func aDriverDroppingTheDeviceIsADisconnection() throws {
        let fake = FakeCameras.vivid()
        try camera("video0", fake)
        let monitor = monitor()
        try monitor.start()
        fake.disconnect()
        let seen = try events(monitor, count: 1)
        #expect(seen == [.disconnected(path: "\(devRoot)/video0", name: "Fake Camera", mediaType: .video)])
        #expect(monitor.watchedCameras.isEmpty)
    }

    @Test func aDroppedCameraThatComesBackOnItsNodeIsConnectedAgain() throws {
        let fake = FakeCameras.vivid()
        try camera("video0", fake)
        let monitor = monitor()
        monitor.livenessInterval = 0.05
        try monitor.start()
        fake.disconnect()
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        defer { close(ends[0]); close(ends[1]) }
        var seen: [DeviceEvent] = []
        let stop = ends[1]
        let timer = try StopTimer(writingTo: stop, after: 5)
        defer { timer.cancel() }
        try monitor.run(stopDescriptor: ends[0]) { event in
            seen.append(event)
            if case .disconnected = event { fake.reconnect() }
            if seen.count == 2 || seen.count > 5 {
                var byte: UInt8 = 1
                _ = write(stop, &byte, 1)
            }
        }
        #expect(seen.count == 2)
        #expect(seen.first == .disconnected(path: "\(devRoot)/video0", name: "Fake Camera", mediaType: .video))
        guard case .connected(let path, _, .video, _)? = seen.last else {
            Issue.record("no connection: \(seen)")
            return
        }
        #expect(path == "\(devRoot)/video0")
        #expect(monitor.watchedCameras == ["\(devRoot)/video0"])
    }

    @Test func nodesArrivingAndLeavingAreConnectionsAndDisconnections() throws {
        let monitor = monitor()
        try monitor.start()
        // A new camera node, then a node that is not a camera (an output), then the camera goes.
        try camera("video4")
        let output = FakeCameras.vivid()
        output.capability = V4L2Capability(driver: "fake", card: "Fake Output", busInfo: "platform:fake", capabilities: 0x8400_0002, deviceCaps: 0x0400_0002)
        try camera("video5", output)
        let first = try events(monitor, count: 1)
        #expect(first == [.connected(path: "\(devRoot)/video4", name: "Fake Camera", mediaType: .video,
                                     uniqueID: UniqueID.derivedVideoID(busInfo: "platform:fake", card: "Fake Camera", index: 0))])
        try FileManager.default.removeItem(atPath: "\(devRoot)/video4")
        let second = try events(monitor, count: 1)
        #expect(second == [.disconnected(path: "\(devRoot)/video4", name: "Fake Camera", mediaType: .video)])
    }
}

/// Ends a monitor's run after a time limit: writes a byte to `stop` after
/// `seconds` unless cancelled first. `cancel()` ends its thread and joins
/// it, so it never writes to a descriptor the test has closed (whose number
/// a test running alongside may have been given since).
private final class StopTimer: Sendable {
    private let thread: SystemThread
    private let cancelled: DispatchSemaphore

    init(writingTo stop: Int32, after seconds: Double) throws {
        let cancelled = DispatchSemaphore(value: 0)
        self.cancelled = cancelled
        thread = try SystemThread(name: "stop timer") {
            if cancelled.wait(timeout: .now() + seconds) == .timedOut {
                var byte: UInt8 = 1
                _ = write(stop, &byte, 1)
            }
        }
    }

    /// Stops the timer (it writes nothing more) and waits for its thread to end.
    func cancel() {
        cancelled.signal()
        thread.join()
    }
}
