#if canImport(Glibc)
import Glibc
#endif

/// Zoom and low-light boost of a camera, as AVCaptureDevice has them, on
/// the V4L2 controls that carry them (see `CameraFeatures.swift`).
extension DeviceControls {
    // MARK: Zoom

    /// Whether the device zooms (V4L2_CID_ZOOM_ABSOLUTE).
    package var isZoomSupported: Bool { usable(ControlID.zoomAbsolute) != nil }

    /// The zoom scale: V4L2 gives zoom in device units with no optical
    /// meaning, so the minimum counts as 1.0 and each `scale` units as one
    /// more: the minimum itself when it is positive (UVC cameras report
    /// 100…500 for 1x…5x), else one step.
    static func zoomScale(_ zoom: DeviceControl) -> Double {
        zoom.minimum > 0 ? Double(zoom.minimum) : Double(max(zoom.step, 1))
    }

    static func zoomFactor(value: Int64, zoom: DeviceControl) -> Double {
        1 + Double(value - zoom.minimum) / zoomScale(zoom)
    }

    static func zoomValue(factor: Double, zoom: DeviceControl) -> Int64 {
        let raw = zoom.minimum + Int64(((factor - 1) * zoomScale(zoom)).rounded())
        return min(max(raw, zoom.minimum), zoom.maximum)
    }

    /// The zoom factor now (1.0 is the full field of view), or nil without zoom.
    package func videoZoomFactor() throws(ControlError) -> Double? {
        guard let zoom = try control(id: ControlID.zoomAbsolute), let value = zoom.value?.integer else { return nil }
        return Self.zoomFactor(value: value, zoom: zoom)
    }

    /// The largest zoom factor, or nil without zoom.
    package func videoMaxZoomFactor() throws(ControlError) -> Double? {
        guard let zoom = try control(id: ControlID.zoomAbsolute) else { return nil }
        return Self.zoomFactor(value: zoom.maximum, zoom: zoom)
    }

    private func zoomControl(for factor: Double) throws(ControlError) -> DeviceControl {
        guard let zoom = usable(ControlID.zoomAbsolute) else {
            throw unsupported("zoom", "the device has no absolute zoom control (zoom_absolute)")
        }
        let maximum = Self.zoomFactor(value: zoom.maximum, zoom: zoom)
        guard factor.isFinite, factor >= 1, factor <= maximum + 1e-9 else {
            throw .outOfRange(device: path, control: CameraFeature.zoom.rawValue, value: String(factor), allowed: "1.0…\(formatFactor(maximum))")
        }
        return zoom
    }

    /// Jumps to a zoom factor.
    package func setVideoZoomFactor(_ factor: Double) throws(ControlError) {
        try requireLock()
        let zoom = try zoomControl(for: factor)
        try setRaw(ControlID.zoomAbsolute, snap(Self.zoomValue(factor: factor, zoom: zoom), zoom), name: CameraFeature.zoom.rawValue)
    }

    /// Moves smoothly to a zoom factor: the factor changes exponentially, by
    /// `rate` powers of two per second (1.0 doubles or halves it each
    /// second), which looks linear. Returns when the factor is reached, or
    /// when `cancellation` is cancelled, leaving the zoom where it got to.
    /// `progress` hears each factor set. Answers the factor the ramp ended at.
    @discardableResult
    package func rampToVideoZoomFactor(_ factor: Double, rate: Double, tick: Double = 1.0 / 30,
                                      cancellation: ControlCancellation? = nil,
                                      progress: ((Double) -> Void)? = nil) throws(ControlError) -> Double {
        try requireLock()
        let zoom = try zoomControl(for: factor)
        guard rate.isFinite, rate > 0 else {
            throw .outOfRange(device: path, control: "zoom ramp rate", value: String(rate), allowed: "a rate above 0 (powers of two per second)")
        }
        guard let startValue = try control(id: ControlID.zoomAbsolute)?.value?.integer else {
            throw .requestFailed(device: path, control: CameraFeature.zoom.rawValue, SystemCallError(call: "ioctl(VIDIOC_G_EXT_CTRLS)", errno: 5))
        }
        let start = Self.zoomFactor(value: startValue, zoom: zoom)
        let octaves = log2(factor / start)
        let duration = abs(octaves) / rate
        let direction: Double = octaves < 0 ? -1 : 1
        let startTime = clock.now()
        var lastValue = startValue
        var current = start
        var step = 1
        while true {
            if cancellation?.isCancelled == true { return current }
            let elapsed = clock.now() - startTime
            let done = elapsed >= duration
            let target = done ? factor : start * pow(2, direction * rate * elapsed)
            let value = snap(Self.zoomValue(factor: target, zoom: zoom), zoom)
            if value != lastValue {
                let stored = try setRaw(ControlID.zoomAbsolute, value, name: CameraFeature.zoom.rawValue)
                lastValue = stored
                current = Self.zoomFactor(value: stored, zoom: zoom)
                progress?(current)
            }
            if done { return current }
            clock.sleep(until: min(startTime + Double(step) * tick, startTime + duration))
            step += 1
        }
    }

    // MARK: Low light

    /// Whether the device can lower its frame rate to expose longer in low
    /// light (V4L2_CID_EXPOSURE_AUTO_PRIORITY).
    package var isLowLightBoostSupported: Bool { usable(ControlID.exposureAutoPriority) != nil }

    /// Whether the device may boost in low light now, or nil without the control.
    package func automaticallyEnablesLowLightBoostWhenAvailable() throws(ControlError) -> Bool? {
        try control(id: ControlID.exposureAutoPriority)?.value.map { $0.integer != 0 }
    }

    package func setAutomaticallyEnablesLowLightBoostWhenAvailable(_ enabled: Bool) throws(ControlError) {
        try requireLock()
        guard isLowLightBoostSupported else {
            throw unsupported("low-light boost", "the device has no exposure priority control (exposure_dynamic_framerate)")
        }
        try setRaw(ControlID.exposureAutoPriority, enabled ? 1 : 0, name: CameraFeature.lowLightBoost.rawValue)
    }
}
