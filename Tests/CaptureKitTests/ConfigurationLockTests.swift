@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// The configuration lock: V4L2 priority plus an advisory lock naming the holder.
struct ConfigurationLockTests {
    @Test func theLockRaisesThePriorityAndKeepsOtherHandlesOut() throws {
        let camera = FakeCameras.vivid()
        let directory = try temporaryLockDirectory()
        let first = try openControls(camera, lockDirectory: directory)
        try first.lockForConfiguration()
        #expect(first.isLockedForConfiguration)
        #expect(first.isLockEnforcedByDriver == true)
        #expect(try first.node.priority() == .record)
        // Another program's handle cannot change a control meanwhile.
        let other = FakeControlHandle(camera: camera)
        #expect(throws: SystemCallError(call: "ioctl(VIDIOC_S_EXT_CTRLS)", errno: EBUSY)) {
            try other.setControlValue(id: 0x0098_0900, value: 1)
        }
        // This one can.
        try first.apply([ControlAssignment(key: "brightness", value: "1")])
        first.unlockForConfiguration()
        #expect(try first.node.priority() == .interactive)
        #expect(try other.setControlValue(id: 0x0098_0900, value: 2) == 2)
    }

    @Test func aSecondLockIsRefusedNamingTheHoldersProcess() throws {
        let camera = FakeCameras.vivid()
        let directory = try temporaryLockDirectory()
        let first = try openControls(camera, lockDirectory: directory)
        try first.lockForConfiguration()
        let second = try openControls(camera, lockDirectory: directory)
        #expect {
            try second.lockForConfiguration()
        } throws: { error in
            guard case ControlError.locked(let device, let holder) = error else { return false }
            return device == "/dev/fake-video0" && holder.processID == getpid() && holder.viaAdvisoryLock
                && "\(error)".hasPrefix("/dev/fake-video0: locked for configuration by process \(getpid())")
        }
        #expect(ConfigurationLock.currentHolder(of: "/dev/fake-video0", directory: directory)?.processID == getpid())
        first.unlockForConfiguration()
        #expect(ConfigurationLock.currentHolder(of: "/dev/fake-video0", directory: directory) == nil)
        try second.lockForConfiguration()
        #expect(second.isLockedForConfiguration)
    }

    @Test func aProgramHoldingThePriorityWithoutTheAdvisoryLockIsRefusedToo() throws {
        let camera = FakeCameras.vivid()
        let stranger = FakeControlHandle(camera: camera)
        try stranger.setPriority(.record)
        let controls = try openControls(camera)
        #expect {
            try controls.lockForConfiguration()
        } throws: { error in
            guard case ControlError.locked(_, let holder) = error else { return false }
            return !holder.viaAdvisoryLock
        }
        // The advisory lock was given back: once the stranger closes, it can be taken.
        stranger.release()
        try controls.lockForConfiguration()
    }

    @Test func aDriverWithoutPrioritiesGetsTheAdvisoryLockOnly() throws {
        let camera = FakeCameras.vivid()
        camera.supportsPriority = false
        let controls = try openControls(camera)
        try controls.lockForConfiguration()
        #expect(controls.isLockEnforcedByDriver == false)
    }

    @Test func releasingTwiceIsHarmlessAndTheLockEndsWithItsObject() throws {
        let camera = FakeCameras.vivid()
        let directory = try temporaryLockDirectory()
        do {
            let controls = try openControls(camera, lockDirectory: directory)
            try controls.lockForConfiguration()
            controls.unlockForConfiguration()
            controls.unlockForConfiguration()
            try controls.lockForConfiguration()
        }
        #expect(ConfigurationLock.currentHolder(of: "/dev/fake-video0", directory: directory) == nil)
    }

    @Test func lockFilesAreNamedForTheDeviceNumberOfACharacterDevice() {
        #expect(ConfigurationLock.lockFileName(for: "/dev/null") == "capctl-config-c1-3.lock")
        #expect(ConfigurationLock.lockFileName(for: "/no/such/video9") == "capctl-config-_no_such_video9.lock")
    }

    @Test func theLockIsHeldAgainstAnotherProcess() throws {
        // A child process takes the advisory lock of the same device; this one is refused.
        let directory = try temporaryLockDirectory()
        let lockFile = "\(directory)/\(ConfigurationLock.lockFileName(for: "/dev/fake-video0"))"
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", "echo \"$$ holder\" > '\(lockFile)'; exec 9<'\(lockFile)'; flock 9; echo locked; exec sleep 30"]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        defer { child.terminate(); child.waitUntilExit() }
        _ = out.fileHandleForReading.availableData // "locked": the child holds it now
        let controls = try openControls(FakeCameras.vivid(), lockDirectory: directory)
        #expect {
            try controls.lockForConfiguration()
        } throws: { error in
            guard case ControlError.locked(_, let holder) = error else { return false }
            return holder.processID == child.processIdentifier && holder.command == "holder"
        }
    }
}
