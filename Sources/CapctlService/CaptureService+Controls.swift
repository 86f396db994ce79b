import CapctlCommands
import CaptureKit
#if canImport(Glibc)
import Glibc
#endif

/// A camera's controls and torch over HTTP, as `capctl controls --json`,
/// `capctl set --json` and `capctl set-torch --json` give them.
///
/// The session holds each camera's configuration lock while it runs (unless
/// `--no-lock`): an advisory lock other capctl processes see, and the V4L2
/// record priority on the handle it captures through, so the driver refuses
/// changes from every other handle. The service's own changes go through
/// that capturing handle (`CaptureInput.withControlsLockedForConfiguration`),
/// so they pass while every other process stays locked out.
extension CaptureService {
    /// `GET /devices/{id}/controls`: the document `capctl controls DEVICE --json`
    /// prints; a virtual camera's has no classes and no features.
    package func controlsDocument(device id: String) throws(ServiceError) -> ControlsDocument {
        let (camera, discovery, named) = try namedCamera(id)
        guard case .hardware(let device) = named else {
            return ControlsDocument(device: named, classes: [], features: FeaturesJSON(nil), discovery: discovery)
        }
        do throws(ControlError) {
            // Reading needs no lock: any handle may read while the session's holds the priority.
            let controls = try DeviceControls.open(device.path)
            return ControlsDocument(device: named, classes: try controls.controlClasses(), features: FeaturesJSON(controls),
                                    discovery: discovery)
        } catch {
            throw Self.serviceError(error, device: camera.source.path)
        }
    }

    /// `PATCH /devices/{id}/controls`: applies `{"name": value, …}` as
    /// `capctl set DEVICE name=value …` does, under the session's
    /// configuration lock; answers `capctl set --json`'s document. Values
    /// are numbers, strings (menu entries, min, max, default, camera features'
    /// modes) or booleans (on/off). Every setting is checked before the first
    /// is applied. A JSON object has no order: switches of automatic modes
    /// (names holding "auto") and the camera features focus, exposure and
    /// white_balance come first, so that `{"gain_automatic": false, "gain": 100}` works.
    package func applyControls(device id: String, _ changes: ControlChanges) throws(ServiceError) -> SetDocument {
        let (camera, discovery, named) = try namedCamera(id)
        guard case .hardware(let device) = named else {
            throw ServiceError(.badRequest, "device \(id) (\(camera.source.path)) is a virtual camera: it has no controls to set")
        }
        let assignments = changes.assignments
        var applied: [AppliedSetting] = []
        do throws(ControlError) {
            try controlChanges.withLock { _ throws(ControlError) in
                try camera.withControlsLockedForConfiguration { controls throws(ControlError) in
                    try controls.apply(assignments) { applied.append($0) }
                }
            }
        } catch {
            throw Self.serviceError(error, device: device.path)
        }
        let index = discovery.devices(for: .video).firstIndex { $0.uniqueID == device.uniqueID }
        return SetDocument(device: DeviceJSON(device, index: index), applied: applied.map(AppliedJSON.init),
                           held: camera.locksConfiguration)
    }

    /// `POST /devices/{id}/torch` with `{"on": true}`, `{"on": false}`,
    /// `{"level": 0.5}` or `{"level": "max"}` (a level turns it on); `{}`
    /// changes nothing. Answers `capctl set-torch --json`'s document.
    package func setTorch(device id: String, _ request: TorchRequest) throws(ServiceError) -> TorchStatusJSON {
        let camera = try input(id)
        do throws(TorchError) {
            let status = try controlChanges.withLock { _ throws(TorchError) -> TorchStatus in
                try camera.withTorchLockedForConfiguration { torch throws(TorchError) -> TorchStatus in
                    switch request {
                    case .on(let level): try torch.setTorchModeOn(level: level)
                    case .off: try torch.setTorchMode(.off)
                    case .status: break
                    }
                    return try torch.status()
                }
            }
            return TorchStatusJSON(status)
        } catch {
            throw Self.serviceError(error)
        }
    }

    /// The session's camera `id`, resolved as `capctl controls` resolves a device.
    private func namedCamera(_ id: String) throws(ServiceError) -> (CaptureInput, DeviceDiscovery, NamedDevice) {
        let camera = try input(id)
        guard camera.mediaType == .video else {
            throw ServiceError(.badRequest, "device \(id) (\(camera.source.path)) is a microphone: it has no camera controls")
        }
        let discovery = DeviceDiscovery()
        do throws(CaptureError) {
            return (camera, discovery, try NamedDevice(camera.source.path, expecting: .video, discovery: discovery))
        } catch {
            throw ServiceError(.unavailable, error.description)
        }
    }

    /// A control refusal as the service's: what was asked is wrong (400),
    /// another process holds the lock or the device is busy (409), the
    /// device went away (503), or the request failed (500).
    static func serviceError(_ error: ControlError, device: String) -> ServiceError {
        switch error {
        case .unknownControl, .invalidValue, .outOfRange, .readOnly, .inactive, .notSupported:
            return ServiceError(.badRequest, error.description)
        case .locked:
            return ServiceError(.conflict, error.description)
        case .notLockedForConfiguration:
            return ServiceError(.failed, error.description)
        case .device(let deviceError):
            return ServiceError(.unavailable, deviceError.description)
        case .requestFailed(_, _, let callError):
            switch callError.errno {
            case EBUSY: return ServiceError(.conflict, error.description)
            case ENODEV, ENXIO: return ServiceError(.unavailable, error.description)
            case EINVAL, ERANGE: return ServiceError(.badRequest, error.description)
            default: return ServiceError(.failed, error.description)
            }
        }
    }

    /// A torch refusal as the service's: no torch, or a level or mode it
    /// does not take (400); busy (409); not available now (503); else 500.
    static func serviceError(_ error: TorchError) -> ServiceError {
        switch error {
        case .noTorch, .noLightFound, .noSuchLED, .levelOutOfRange, .modeNotSupported:
            return ServiceError(.badRequest, error.description)
        case .busy: return ServiceError(.conflict, error.description)
        case .levelUnavailable: return ServiceError(.unavailable, error.description + "; try again later, or level \"max\"")
        case .control(let controlError): return serviceError(controlError, device: "")
        case .permissionDenied, .io: return ServiceError(.failed, error.description)
        }
    }
}
