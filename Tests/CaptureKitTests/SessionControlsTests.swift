@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// Controls changed through the handle a session captures on
/// (`DeviceControls(capturing:path:)`, behind
/// `CaptureInput.withControlsLockedForConfiguration`): while the session
/// holds the configuration lock (the advisory lock, and the record priority
/// on its capturing handle), its own process changes the camera through that
/// handle, and every other handle and process stays out.
struct SessionControlsTests {
    /// A camera as a running session holds it: its capturing handle at
    /// record priority, the advisory lock taken.
    private func heldCamera(_ camera: FakeCamera, directory: String) throws -> (capture: FakeControlHandle, lock: ConfigurationLock) {
        let capture = FakeControlHandle(camera: camera)
        try capture.setPriority(.record)
        let lock = try ConfigurationLock.acquireAdvisory(devicePath: "/dev/fake-video0", directory: directory)
        return (capture, lock)
    }

    @Test func theSessionsOwnChangesPassWhileOthersAreKeptOut() throws {
        let camera = FakeCameras.vivid()
        let directory = try temporaryLockDirectory()
        let held = try heldCamera(camera, directory: directory)
        defer { held.lock.release() }

        // The service's change, through the capturing handle.
        let controls = DeviceControls(capturing: held.capture, path: "/dev/fake-video0")
        #expect(controls.isLockedForConfiguration)
        var applied: [AppliedSetting] = []
        try controls.apply([ControlAssignment(key: "gain_automatic", value: "off"), ControlAssignment(key: "brightness", value: "10")]) {
            applied.append($0)
        }
        #expect(applied.map(\.name) == ["gain_automatic", "brightness"])
        #expect(camera.value(0x0098_0900) == 10)
        #expect(camera.value(ControlID.autoGain) == 0)
        // Taking or releasing "its" lock changes nothing: the session's stays.
        try controls.lockForConfiguration()
        controls.unlockForConfiguration()
        #expect(try held.capture.priority() == .record)
        #expect(ConfigurationLock.currentHolder(of: "/dev/fake-video0", directory: directory)?.processID == getpid())

        // `capctl set` in another process: refused by the advisory lock, naming the holder.
        let other = try openControls(camera, lockDirectory: directory)
        #expect {
            try other.lockForConfiguration()
        } throws: { error in
            guard case ControlError.locked(_, let holder) = error else { return false }
            return holder.processID == getpid()
        }
        // Any other program's handle: refused by the driver.
        let stranger = FakeControlHandle(camera: camera)
        #expect(throws: SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: EBUSY)) {
            try stranger.setControlValue(id: 0x0098_0900, value: 99)
        }
        #expect(camera.value(0x0098_0900) == 10)
    }

    @Test func outOfRangeAndUnknownControlsChangeNothing() throws {
        let camera = FakeCameras.vivid()
        let directory = try temporaryLockDirectory()
        let held = try heldCamera(camera, directory: directory)
        defer { held.lock.release() }
        let controls = DeviceControls(capturing: held.capture, path: "/dev/fake-video0")
        #expect {
            try controls.apply([ControlAssignment(key: "contrast", value: "7"), ControlAssignment(key: "brightness", value: "300")])
        } throws: { error in
            if case ControlError.outOfRange = error { return true } else { return false }
        }
        #expect {
            try controls.apply([ControlAssignment(key: "contrast", value: "7"), ControlAssignment(key: "sharpness", value: "1")])
        } throws: { error in
            if case ControlError.unknownControl = error { return true } else { return false }
        }
        #expect(camera.value(0x0098_0901) == 128, "every setting is checked before the first is applied")
    }

    @Test func theTorchOnTheCamerasNodeGoesThroughTheCapturingHandle() throws {
        let camera = FakeCameras.flash()
        let directory = try temporaryLockDirectory()
        let held = try heldCamera(camera, directory: directory)
        defer { held.lock.release() }
        let light = try #require(V4L2Torch(controls: DeviceControls(capturing: held.capture, path: "/dev/fake-video0"), isSubdevice: false))
        let torch = Torch(backend: light)
        try torch.lockForConfiguration()
        defer { torch.unlockForConfiguration() }
        _ = try torch.setTorchModeOn(level: .level(0.5))
        #expect(try torch.isTorchActive())
        try torch.setTorchMode(.off)
        #expect(try !torch.isTorchActive())
    }
}
