@testable import CaptureKit
import Foundation
import Glibc
import Testing

/// rampToVideoZoomFactor: exponential in time, at a rate in powers of two per second.
struct ZoomRampTests {
    private func camera() -> (FakeCamera, FakeClock, DeviceControls) {
        let camera = FakeCameras.full(zoomMinimum: 100, zoomMaximum: 800)
        let clock = FakeClock()
        let controls = try! openControls(camera, clock: clock)
        try! controls.lockForConfiguration()
        return (camera, clock, controls)
    }

    @Test func doublingAtRateOneTakesOneSecond() throws {
        let (camera, clock, controls) = camera()
        let start = clock.now()
        let reached = try controls.rampToVideoZoomFactor(2, rate: 1)
        #expect(reached == 2)
        #expect(abs(clock.now() - start - 1) < 1e-9)
        #expect(camera.value(ControlID.zoomAbsolute) == 200)
    }

    @Test func theFactorGrowsExponentiallyWithTime() throws {
        let (camera, clock, controls) = camera()
        let start = clock.now()
        try controls.rampToVideoZoomFactor(4, rate: 2)
        let ramp = camera.log.filter { $0.id == ControlID.zoomAbsolute }
        // Each value set is 100·2^(2t), to the nearest device unit.
        for entry in ramp.dropLast() {
            let t = entry.time - start
            let expected = 100 * pow(2, 2 * t)
            #expect(abs(Double(entry.value) - expected) <= 0.5 + 1e-9, "at \(t) s: \(entry.value), expected \(expected)")
        }
        #expect(ramp.last?.value == 400)
        #expect(ramp.map(\.value) == ramp.map(\.value).sorted())
        // 4x at two octaves per second: one second, in ticks of 1/30 s.
        #expect(abs(clock.now() - start - 1) < 1e-9)
        #expect(ramp.count >= 25)
        // Halfway in time is the geometric middle: 2x.
        let middle = ramp.min { abs($0.time - start - 0.5) < abs($1.time - start - 0.5) }!
        #expect(abs(Double(middle.value) - 200) <= 1)
    }

    @Test func zoomingOutHalvesAtTheSameRate() throws {
        let (camera, clock, controls) = camera()
        try controls.setVideoZoomFactor(8)
        camera.log.removeAll()
        let start = clock.now()
        try controls.rampToVideoZoomFactor(1, rate: 3)
        #expect(abs(clock.now() - start - 1) < 1e-9)
        let values = camera.sets(of: ControlID.zoomAbsolute)
        #expect(values == values.sorted(by: >))
        #expect(values.last == 100)
    }

    @Test func cancellingStopsWhereTheRampIs() throws {
        let (camera, clock, controls) = camera()
        let cancellation = ControlCancellation()
        var steps = 0
        let start = clock.now()
        let reached = try controls.rampToVideoZoomFactor(8, rate: 1, cancellation: cancellation) { _ in
            steps += 1
            if steps == 10 { cancellation.cancel() }
        }
        #expect(reached > 1 && reached < 2)
        #expect(clock.now() - start < 0.5)
        #expect(Double(camera.value(ControlID.zoomAbsolute)!) == reached * 100)
    }

    @Test func aRateMustBePositive() throws {
        let (_, _, controls) = camera()
        #expect(throws: ControlError.self) { try controls.rampToVideoZoomFactor(2, rate: 0) }
        #expect(throws: ControlError.self) { try controls.rampToVideoZoomFactor(2, rate: -1) }
        #expect(throws: ControlError.self) { try controls.rampToVideoZoomFactor(9, rate: 1) }
    }

    @Test func assignmentsRampWhenAskedTo() throws {
        let (camera, clock, controls) = camera()
        let start = clock.now()
        var applied: [AppliedSetting] = []
        try controls.apply([ControlAssignment(key: "zoom", value: "2x")], zoomRampRate: 0.5) { applied.append($0) }
        #expect(abs(clock.now() - start - 2) < 1e-9)
        #expect(camera.sets(of: ControlID.zoomAbsolute).count > 10)
        #expect(applied == [AppliedSetting(name: "zoom", controlID: nil, value: .number(2))])
    }
}

/// CaptureDevice's ramp runs on a thread of its own: one that cannot be
/// made is an error, not a ramp that never moves.
extension CaptureDeviceCameraSettingsTests {
    @Test func aRampWhoseThreadCannotBeMadeIsAnErrorNamingTheCall() throws {
        let camera = FakeCameras.full(zoomMinimum: 100, zoomMaximum: 800)
        let (device, _) = settingsDevice(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        let failure = SystemCallError(call: "pthread_create(zoom ramp)", errno: EAGAIN)
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .always(errno: EAGAIN)
            driver.forcedCallPrefix = "pthread_create"
            #expect(throws: ControlError.requestFailed(device: device.path, control: "zoom ramp", failure)) {
                try device.ramp(toVideoZoomFactor: 4, withRate: 2)
            }
        }
        #expect(!device.isRampingVideoZoom)
        #expect(camera.sets(of: ControlID.zoomAbsolute).isEmpty)
    }
}
