#if canImport(Glibc)
import Glibc
#endif

/// A point in a picture, from (0, 0) at the top left to (1, 1) at the
/// bottom right: AVFoundation's CGPoint for points of interest.
///
/// Differs from AVFoundation on purpose: Linux has no CoreGraphics, so this
/// small type stands for CGPoint; and V4L2 has no focus or exposure point at
/// all, so no device here supports one (see `isFocusPointOfInterestSupported`).
public struct PointOfInterest: Sendable, Hashable, CustomStringConvertible {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    /// (0.5, 0.5), AVFoundation's default point of interest.
    public static let center = PointOfInterest(x: 0.5, y: 0.5)

    public var description: String { "(\(formatFactor(x)), \(formatFactor(y)))" }
}

/// The state behind a camera's focus, exposure, white balance, zoom and
/// torch on `CaptureDevice`: its controls, opened once when first needed
/// and kept, its light, and the zoom ramp in progress. Reached only under
/// `CaptureDevice.cameraSettings`' lock.
struct CameraSettingsState {
    /// The camera's V4L2 controls, once opened.
    var controls: CameraControlsHandle?
    /// The clock one-shot modes and zoom ramps wait on (tests put a fake one here).
    var clock: any ControlClock = MonotonicControlClock()
    /// Where the camera's light is looked for; nil: the usual /dev and /sys
    /// through the device's own V4L2 interface.
    var torchDiscovery: TorchDiscovery?
    /// The camera's light, once looked for (nil inside: it has none).
    var torch: Torch??
    /// Bumped by each ramp started or cancelled and by each jump of the zoom:
    /// a ramp whose number is no longer current stops.
    var rampGeneration = 0
    var isRamping = false
}

/// An open handle on a camera's controls, for `CaptureDevice`'s settings.
///
/// Each change takes the controls' own configuration lock (the V4L2
/// priority on this handle) for the change only: held longer, it would keep
/// this process's own capture stream from raising its priority. Its advisory
/// lock file lives in a private folder, so that it does not collide with the
/// advisory lock the `CaptureDevice` itself holds under
/// `lockForConfiguration()`; that one is what other processes see.
final class CameraControlsHandle {
    let controls: DeviceControls
    private let lockDirectory: String

    init(controls: DeviceControls, lockDirectory: String) {
        self.controls = controls
        self.lockDirectory = lockDirectory
    }

    deinit {
        controls.unlockForConfiguration()
        try? Posix.unlink("\(lockDirectory)/\(ConfigurationLock.lockFileName(for: controls.path))")
        rmdir(lockDirectory)
    }

    /// Runs `body` with the controls locked for configuration.
    func change<T>(_ body: (DeviceControls) throws(ControlError) -> T) throws(ControlError) -> T {
        try controls.lockForConfiguration()
        defer {
            controls.unlockForConfiguration()
            try? Posix.unlink("\(lockDirectory)/\(ConfigurationLock.lockFileName(for: controls.path))")
        }
        return try body(controls)
    }

    /// A new private folder for the controls' lock file.
    static func makeLockDirectory(device: String) throws(ControlError) -> String {
        var template = Array("\(ConfigurationLock.defaultDirectory())/capctl-settings-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }
        guard made != nil else {
            throw .requestFailed(device: device, control: "", SystemCallError(call: "mkdtemp", errno: errno))
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Focus, exposure, white balance, zoom and torch, as AVCaptureDevice has
/// them, on the camera's V4L2 controls (`DeviceControls` stays the raw layer
/// underneath; these call it).
///
/// **Changing settings.** As with AVCaptureDevice, call `lockForConfiguration()`
/// first and `unlockForConfiguration()` after. Where AVFoundation raises an
/// exception (a change without the lock, an unsupported mode), Swift cannot
/// catch one, so each setting comes in two forms:
/// - the property setter (`device.focusMode = .locked`), kept for ported
///   code: it is **ignored** when the device is not locked for
///   configuration, when the device does not support the value, or when the
///   change fails, as `activeFormat`'s setter is;
/// - a throwing method (`try device.setFocusMode(.locked)`) that says why a
///   change did not happen (`ControlError`: `.notLockedForConfiguration`,
///   `.notSupported`, `.outOfRange`, `.locked` by another process, or the
///   failed request). AVFoundation's methods (`setFocusModeLocked(lensPosition:completionHandler:)`,
///   `setExposureModeCustom`, `setExposureTargetBias`, `ramp`, `setTorchModeOn`) throw
///   in the same way.
///
/// **Reading settings** never fails: a camera without the control, a virtual
/// camera (test pattern) and a microphone answer what AVCaptureDevice answers
/// for a fixed-focus, fixed-exposure camera: every `is…Supported` false,
/// `focusMode`, `exposureMode` and `whiteBalanceMode` `.locked`, `lensPosition`
/// 1, `exposureTargetBias` 0, `videoZoomFactor` and `maxAvailableVideoZoomFactor`
/// 1, `torchMode` `.off`.
///
/// Differences from AVFoundation on purpose:
/// - completion handlers run on the calling thread once the driver has taken
///   the value, with the CLOCK_MONOTONIC time then (`MonotonicClock`, the
///   clock samples are stamped on), not the time of the first frame captured
///   with it: V4L2 does not say which frame that is.
/// - `ExposureMode` has no `.custom`: after `setExposureModeCustom` the mode
///   reads `.locked` (V4L2's manual exposure).
/// - The camera's controls are opened on first use and kept open while the
///   device object lives. Each change raises the V4L2 priority on that handle
///   for its duration, so while a capture session of this process streams the
///   camera holding the record priority (it does when the device was locked
///   for configuration before the session started), the driver refuses
///   changes from any other handle, this one included: they fail with `.locked`.
/// - Changes that wait (one-shot focus, exposure and white balance; see
///   `DeviceControls.settleDuration`) block the calling thread.
extension CaptureDevice {
    // MARK: Reaching the controls

    /// Runs `body` on the camera's controls, opening them the first time.
    /// Throws `.notSupported` for virtual devices and microphones.
    func withControls<T>(_ feature: String, _ body: (CameraControlsHandle) throws(ControlError) -> T) throws(ControlError) -> T {
        guard case .v4l2(let v4l2) = backend else {
            let what = virtualDevice != nil ? "a virtual device has no camera controls" : "a microphone has no camera controls"
            throw .notSupported(device: path, feature: feature, reason: what)
        }
        return try cameraSettings.withLock { (state: inout CameraSettingsState) throws(ControlError) -> T in
            let handle: CameraControlsHandle
            if let open = state.controls {
                handle = open
            } else {
                let directory = try CameraControlsHandle.makeLockDirectory(device: path)
                do throws(ControlError) {
                    let controls = try DeviceControls.open(path, interface: v4l2, clock: state.clock, lockDirectory: directory)
                    handle = CameraControlsHandle(controls: controls, lockDirectory: directory)
                } catch {
                    rmdir(directory)
                    throw error
                }
                state.controls = handle
            }
            return try body(handle)
        }
    }

    /// A reading from the controls, or `fallback` when there is none.
    func reading<T>(_ fallback: T, _ body: (DeviceControls) throws(ControlError) -> T?) -> T {
        let value = try? withControls("") { (handle: CameraControlsHandle) throws(ControlError) -> T? in try body(handle.controls) }
        return (value ?? nil) ?? fallback
    }

    /// Whether the controls (opened if need be) say yes; false without any.
    func supports(_ body: (DeviceControls) -> Bool) -> Bool {
        reading(false) { controls in body(controls) }
    }

    /// A change under the device's configuration lock.
    func change<T>(_ feature: String, _ body: (DeviceControls) throws(ControlError) -> T) throws(ControlError) -> T {
        guard isLockedForConfiguration else { throw .notLockedForConfiguration(device: path) }
        return try withControls(feature) { (handle: CameraControlsHandle) throws(ControlError) -> T in try handle.change(body) }
    }

    // MARK: Focus

    /// Whether the camera can be put in `mode` (V4L2_CID_FOCUS_AUTO,
    /// V4L2_CID_AUTO_FOCUS_START, V4L2_CID_FOCUS_ABSOLUTE).
    public func isFocusModeSupported(_ mode: FocusMode) -> Bool {
        supports { $0.isFocusModeSupported(mode) }
    }

    /// The focus mode. `.locked` for a camera without focus controls, a
    /// virtual camera and a microphone. Setting it is ignored unless the
    /// device is locked for configuration and supports the mode; use
    /// `setFocusMode(_:)` to see why a change did not happen. `.autoFocus`
    /// focuses once, then locks (blocking until done).
    public var focusMode: FocusMode {
        get { reading(.locked) { controls throws(ControlError) in try controls.focusMode() } }
        set { try? setFocusMode(newValue) }
    }

    /// Sets the focus mode, or says why not: not locked for configuration,
    /// not supported, or the request failed.
    public func setFocusMode(_ mode: FocusMode) throws(ControlError) {
        try change("focus mode '\(mode.rawValue)'") { (controls: DeviceControls) throws(ControlError) in
            try controls.setFocusMode(mode)
        }
    }

    /// Always false: V4L2 has no control that focuses on a point.
    public var isFocusPointOfInterestSupported: Bool { false }

    /// Always `.center`; setting it is ignored, as no device here supports a
    /// focus point (`setFocusPointOfInterest(_:)` throws `.notSupported`).
    public var focusPointOfInterest: PointOfInterest {
        get { .center }
        set { try? setFocusPointOfInterest(newValue) }
    }

    /// Throws: `.notLockedForConfiguration` without the lock, else `.notSupported`
    /// (V4L2 has no focus point).
    public func setFocusPointOfInterest(_ point: PointOfInterest) throws(ControlError) {
        guard isLockedForConfiguration else { throw .notLockedForConfiguration(device: path) }
        throw .notSupported(device: path, feature: "focus point of interest", reason: "V4L2 has no control that focuses on a point of the picture")
    }

    /// Whether a one-shot focus is running (V4L2_CID_AUTO_FOCUS_STATUS busy).
    public var isAdjustingFocus: Bool {
        reading(false) { $0.isAdjustingFocus() }
    }

    /// Whether the lens can be put at a chosen position (V4L2_CID_FOCUS_ABSOLUTE).
    public var isLockingFocusWithCustomLensPositionSupported: Bool {
        supports { $0.isLockingFocusWithCustomLensPositionSupported }
    }

    /// The lens position from 0.0 (nearest) to 1.0 (furthest); 1.0 where
    /// there is no absolute focus control (a fixed-focus lens is set far).
    public var lensPosition: Float {
        reading(1) { controls throws(ControlError) in try controls.lensPosition().map(Float.init) }
    }

    /// AVCaptureDevice.currentLensPosition: locks focus where the lens is.
    public static let currentLensPosition: Float = -1

    /// Locks focus with the lens at `lensPosition` (0.0 nearest … 1.0
    /// furthest; `currentLensPosition` keeps the lens where it is), then
    /// calls `completionHandler` with the time the driver took it (see the
    /// extension's notes). Throws when not locked for configuration, without
    /// an absolute focus control, or out of range.
    public func setFocusModeLocked(lensPosition: Float, completionHandler: ((MediaTime) -> Void)? = nil) throws(ControlError) {
        try change("lens position") { (controls: DeviceControls) throws(ControlError) in
            if lensPosition == Self.currentLensPosition {
                try controls.setFocusMode(.locked)
            } else {
                try controls.setFocusModeLocked(lensPosition: Double(lensPosition))
            }
        }
        completionHandler?(MonotonicClock.now())
    }

    // MARK: Exposure

    /// Whether the camera can be put in `mode` (V4L2_CID_EXPOSURE_AUTO).
    public func isExposureModeSupported(_ mode: ExposureMode) -> Bool {
        supports { $0.isExposureModeSupported(mode) }
    }

    /// The exposure mode (`.locked` after `setExposureModeCustom`, and for
    /// cameras without the control, virtual cameras and microphones).
    /// Setting it is ignored unless locked for configuration and supported;
    /// use `setExposureMode(_:)` to see why.
    public var exposureMode: ExposureMode {
        get { reading(.locked) { controls throws(ControlError) in try controls.exposureMode() } }
        set { try? setExposureMode(newValue) }
    }

    /// Sets the exposure mode, or says why not.
    public func setExposureMode(_ mode: ExposureMode) throws(ControlError) {
        try change("exposure mode '\(mode.rawValue)'") { (controls: DeviceControls) throws(ControlError) in
            try controls.setExposureMode(mode)
        }
    }

    /// Always false: V4L2 has no control that meters on a point.
    public var isExposurePointOfInterestSupported: Bool { false }

    /// Always `.center`; setting it is ignored (see `setExposurePointOfInterest(_:)`).
    public var exposurePointOfInterest: PointOfInterest {
        get { .center }
        set { try? setExposurePointOfInterest(newValue) }
    }

    /// Throws: `.notLockedForConfiguration` without the lock, else `.notSupported`.
    public func setExposurePointOfInterest(_ point: PointOfInterest) throws(ControlError) {
        guard isLockedForConfiguration else { throw .notLockedForConfiguration(device: path) }
        throw .notSupported(device: path, feature: "exposure point of interest", reason: "V4L2 has no control that meters on a point of the picture")
    }

    /// The exposure time (V4L2_CID_EXPOSURE_ABSOLUTE, in 100 µs units), or
    /// `.invalid` where the device does not say.
    public var exposureDuration: MediaTime {
        reading(.invalid) { controls throws(ControlError) in
            try controls.exposureDuration().map { MediaTime(value: Int64(($0 * 10_000).rounded()), timescale: 10_000) }
        }
    }

    /// AVCaptureExposureDurationCurrent: keeps the exposure time as it is.
    public static let currentExposureDuration = MediaTime.invalid
    /// AVCaptureISOCurrent: keeps the gain as it is.
    public static let currentISO: Float = 0

    /// The gain now, in the device's own units (V4L2_CID_GAIN); 0 without it.
    /// AVFoundation's ISO has no V4L2 counterpart: the gain stands for it.
    public var iso: Float {
        reading(0) { controls throws(ControlError) in try controls.control(id: ControlID.gain)?.value?.integer.map(Float.init) }
    }

    /// The range `iso` may be set in: the gain control's, or 0…0 without one.
    public var isoRange: ClosedRange<Float> {
        reading(0...0) { controls throws(ControlError) in
            try controls.control(id: ControlID.gain).map { Float($0.minimum)...Float($0.maximum) }
        }
    }

    /// Manual exposure with a chosen time and gain (AVFoundation's custom
    /// mode; the mode then reads `.locked`). `duration` of
    /// `currentExposureDuration` keeps the time. `iso` sets V4L2_CID_GAIN
    /// (in the device's units, see `isoRange`), turning automatic gain off
    /// first; `currentISO` keeps it, and on a device without a gain control
    /// `iso` is ignored. Throws when not locked for configuration, without
    /// an absolute exposure control, or out of range.
    public func setExposureModeCustom(duration: MediaTime, iso: Float, completionHandler: ((MediaTime) -> Void)? = nil) throws(ControlError) {
        try change("custom exposure") { (controls: DeviceControls) throws(ControlError) in
            if duration.isNumeric {
                try controls.setExposureModeCustom(duration: duration.seconds)
            } else if controls.isExposureModeSupported(.locked) {
                try controls.setExposureMode(.locked)
            } else {
                throw .notSupported(device: path, feature: "custom exposure", reason: "the device has no manual exposure mode")
            }
            guard iso != Self.currentISO, let gain = controls.usable(ControlID.gain) else { return }
            guard iso.isFinite, Int64(iso.rounded()) >= gain.minimum, Int64(iso.rounded()) <= gain.maximum else {
                throw .outOfRange(device: path, control: "iso (gain)", value: "\(iso)", allowed: "\(gain.minimum)…\(gain.maximum)")
            }
            if let auto = controls.usable(ControlID.autoGain), auto.value?.integer != 0 {
                try controls.setRaw(ControlID.autoGain, 0, name: "gain_automatic")
            }
            try controls.setRaw(ControlID.gain, controls.snap(Int64(iso.rounded()), gain), name: "gain")
        }
        completionHandler?(MonotonicClock.now())
    }

    /// The exposure compensation in EV (V4L2_CID_AUTO_EXPOSURE_BIAS); 0 without it.
    public var exposureTargetBias: Float {
        reading(0) { controls throws(ControlError) in try controls.exposureTargetBias().map(Float.init) }
    }

    /// The least compensation the device offers; 0 without the control.
    public var minExposureTargetBias: Float {
        reading(0) { $0.exposureTargetBiasValues().first.map(Float.init) }
    }

    /// The most compensation the device offers; 0 without the control.
    public var maxExposureTargetBias: Float {
        reading(0) { $0.exposureTargetBiasValues().last.map(Float.init) }
    }

    /// Sets the compensation to the offered value nearest `bias`, then calls
    /// `completionHandler`. Throws when not locked for configuration, without
    /// the control, or outside the offered range.
    public func setExposureTargetBias(_ bias: Float, completionHandler: ((MediaTime) -> Void)? = nil) throws(ControlError) {
        try change("exposure bias") { (controls: DeviceControls) throws(ControlError) in
            try controls.setExposureTargetBias(Double(bias))
        }
        completionHandler?(MonotonicClock.now())
    }

    // MARK: White balance

    /// Whether the camera can be put in `mode` (V4L2_CID_AUTO_WHITE_BALANCE,
    /// V4L2_CID_DO_WHITE_BALANCE, V4L2_CID_AUTO_N_PRESET_WHITE_BALANCE).
    public func isWhiteBalanceModeSupported(_ mode: WhiteBalanceMode) -> Bool {
        supports { $0.isWhiteBalanceModeSupported(mode) }
    }

    /// The white balance mode (`.locked` without the controls). Setting it is
    /// ignored unless locked for configuration and supported; use
    /// `setWhiteBalanceMode(_:)` to see why.
    public var whiteBalanceMode: WhiteBalanceMode {
        get { reading(.locked) { controls throws(ControlError) in try controls.whiteBalanceMode() } }
        set { try? setWhiteBalanceMode(newValue) }
    }

    /// Sets the white balance mode, or says why not.
    public func setWhiteBalanceMode(_ mode: WhiteBalanceMode) throws(ControlError) {
        try change("white balance mode '\(mode.rawValue)'") { (controls: DeviceControls) throws(ControlError) in
            try controls.setWhiteBalanceMode(mode)
        }
    }

    // MARK: Tests

    /// Puts a clock (and where to look for the light) under the settings, before first use.
    func useCameraSettingsEnvironment(clock: any ControlClock, torchDiscovery: TorchDiscovery? = nil) {
        cameraSettings.withLock { state in
            state.clock = clock
            state.torchDiscovery = torchDiscovery
        }
    }
}
