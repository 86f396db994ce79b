/// Why a control could not be read or changed. Each case names the device
/// and the control, and says what is allowed instead, in words fit for one line.
public enum ControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The device has no control or feature by that name.
    case unknownControl(device: String, name: String, suggestions: [String])
    /// The text is not a value of the control's type.
    case invalidValue(device: String, control: String, value: String, allowed: String)
    /// The value is of the right kind but outside what the control accepts.
    case outOfRange(device: String, control: String, value: String, allowed: String)
    /// The control can only be read.
    case readOnly(device: String, control: String)
    /// The control does not apply now; `hint` says what makes it apply.
    case inactive(device: String, control: String, hint: String)
    /// The device lacks the feature (a focus mode, zoom …); `reason` says what it has.
    case notSupported(device: String, feature: String, reason: String)
    /// A change was asked for without holding the configuration lock.
    case notLockedForConfiguration(device: String)
    /// Another process holds the device's configuration lock.
    case locked(device: String, holder: ConfigurationLockHolder)
    /// Opening or probing the device failed.
    case device(DeviceError)
    /// A request failed: the control (or "" for the device) and the call's error.
    case requestFailed(device: String, control: String, SystemCallError)

    public var description: String {
        switch self {
        case .unknownControl(let device, let name, let suggestions):
            let hint = suggestions.isEmpty ? "" : "; did you mean \(suggestions.map { "'\($0)'" }.joined(separator: " or "))?"
            return "\(device): no control named '\(name)'\(hint) ('capctl controls \(device)' lists them)"
        case .invalidValue(let device, let control, let value, let allowed):
            return "\(device): '\(value)' is not a value of \(control); allowed: \(allowed)"
        case .outOfRange(let device, let control, let value, let allowed):
            return "\(device): \(control)=\(value) is out of range; allowed: \(allowed)"
        case .readOnly(let device, let control):
            return "\(device): \(control) is read-only"
        case .inactive(let device, let control, let hint):
            return "\(device): \(control) is inactive: \(hint)"
        case .notSupported(let device, let feature, let reason):
            return "\(device): \(feature) is not supported: \(reason)"
        case .notLockedForConfiguration(let device):
            return "\(device): the configuration lock is not held; lock the device for configuration before changing it"
        case .locked(let device, let holder):
            return "\(device): locked for configuration by \(holder); try again when it ends"
        case .device(let error):
            return error.description
        case .requestFailed(let device, let control, let error):
            let subject = control.isEmpty ? device : "\(device): \(control)"
            switch error.errno {
            case 16: // EBUSY
                return "\(subject): the device refused the change (busy: another program holds its priority, or is streaming in a way that fixes it): \(error)"
            case 13, 1: // EACCES, EPERM
                return "\(subject): the driver refused the change: \(error)"
            default:
                return "\(subject): \(error)"
            }
        }
    }
}
