/// The kind of value a V4L2 control holds (enum v4l2_ctrl_type).
package enum V4L2ControlType: UInt32, Sendable, Hashable {
    case integer = 1
    case boolean = 2
    case menu = 3
    case button = 4
    case integer64 = 5
    case controlClass = 6
    case string = 7
    case bitmask = 8
    case integerMenu = 9
    case u8 = 0x0100
    case u16 = 0x0101
    case u32 = 0x0102
    case area = 0x0106

    /// The type's name as capctl prints it: `int`, `bool`, `menu` …
    package var name: String {
        switch self {
        case .integer: return "int"
        case .boolean: return "bool"
        case .menu: return "menu"
        case .button: return "button"
        case .integer64: return "int64"
        case .controlClass: return "class"
        case .string: return "string"
        case .bitmask: return "bitmask"
        case .integerMenu: return "intmenu"
        case .u8: return "u8"
        case .u16: return "u16"
        case .u32: return "u32"
        case .area: return "area"
        }
    }

    /// Whether a single integer carries the value (all but strings and compound types).
    var isScalar: Bool {
        switch self {
        case .integer, .boolean, .menu, .button, .integer64, .bitmask, .integerMenu: return true
        default: return false
        }
    }
}

/// Control flags (V4L2_CTRL_FLAG_*), as a set.
package struct V4L2ControlFlags: OptionSet, Sendable, Hashable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    package static let disabled = V4L2ControlFlags(rawValue: 0x0001)
    /// Another file handle holds the control (streaming, or a higher priority).
    package static let grabbed = V4L2ControlFlags(rawValue: 0x0002)
    package static let readOnly = V4L2ControlFlags(rawValue: 0x0004)
    /// Changing it may change other controls.
    package static let update = V4L2ControlFlags(rawValue: 0x0008)
    /// Not applicable in the present configuration (say, gain while automatic gain is on).
    package static let inactive = V4L2ControlFlags(rawValue: 0x0010)
    package static let slider = V4L2ControlFlags(rawValue: 0x0020)
    package static let writeOnly = V4L2ControlFlags(rawValue: 0x0040)
    /// The value changes by itself (the driver's automatic choice).
    package static let volatile = V4L2ControlFlags(rawValue: 0x0080)
    package static let hasPayload = V4L2ControlFlags(rawValue: 0x0100)
    package static let executeOnWrite = V4L2ControlFlags(rawValue: 0x0200)
    package static let modifyLayout = V4L2ControlFlags(rawValue: 0x0400)
    package static let dynamicArray = V4L2ControlFlags(rawValue: 0x0800)

    /// Names of the flags that are set, as v4l2-ctl prints them.
    package var names: [String] {
        let table: [(V4L2ControlFlags, String)] = [
            (.disabled, "disabled"), (.grabbed, "grabbed"), (.readOnly, "read-only"), (.update, "update"),
            (.inactive, "inactive"), (.slider, "slider"), (.writeOnly, "write-only"), (.volatile, "volatile"),
            (.hasPayload, "has-payload"), (.executeOnWrite, "execute-on-write"), (.modifyLayout, "modify-layout"),
            (.dynamicArray, "dynamic-array"),
        ]
        return table.filter { contains($0.0) }.map(\.1)
    }
}

/// One entry of a menu or integer-menu control.
package struct ControlMenuItem: Sendable, Hashable {
    package let index: Int64
    /// The entry's text for a menu; its number as text for an integer menu.
    package let name: String
    /// The entry's number, for integer menus.
    package let integerValue: Int64?

    package init(index: Int64, name: String, integerValue: Int64? = nil) {
        self.index = index
        self.name = name
        self.integerValue = integerValue
    }
}

/// A control's current value.
package enum ControlValue: Sendable, Hashable, CustomStringConvertible {
    case integer(Int64)
    case string(String)

    package var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    package var description: String {
        switch self {
        case .integer(let value): return String(value)
        case .string(let text): return text
        }
    }
}

/// A V4L2 control as the device describes it: the counterpart of one
/// configurable property of AVCaptureDevice, in the driver's own terms.
package struct DeviceControl: Sendable, Hashable {
    package let id: UInt32
    /// The driver's name: "Gain, Automatic".
    package let label: String
    /// The name capctl accepts and prints, as v4l2-ctl spells it: "gain_automatic".
    package let name: String
    /// Nil for a type CaptureKit does not know (a codec's compound control).
    package let type: V4L2ControlType?
    package let rawType: UInt32
    package let minimum: Int64
    package let maximum: Int64
    package let step: UInt64
    package let defaultValue: Int64
    package let flags: V4L2ControlFlags
    /// Menu entries, for menu and integer-menu controls.
    package let menu: [ControlMenuItem]
    /// The current value, or nil where it cannot be read (write-only, compound, or the read failed).
    package let value: ControlValue?

    package init(id: UInt32, label: String, type: UInt32, minimum: Int64, maximum: Int64, step: UInt64,
                defaultValue: Int64, flags: V4L2ControlFlags, menu: [ControlMenuItem] = [], value: ControlValue?) {
        self.id = id
        self.label = label
        self.name = DeviceControl.canonicalName(label)
        self.type = V4L2ControlType(rawValue: type)
        self.rawType = type
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.flags = flags
        self.menu = menu
        self.value = value
    }

    /// The control class (V4L2_CTRL_CLASS_*) this control belongs to.
    package var controlClass: UInt32 { id & 0x0fff_0000 }

    package var isReadOnly: Bool { flags.contains(.readOnly) }
    package var isInactive: Bool { flags.contains(.inactive) }
    package var isDisabled: Bool { flags.contains(.disabled) }
    package var isWritable: Bool { !flags.contains(.readOnly) && !flags.contains(.disabled) && type != .controlClass }

    /// The menu entry with this index, if the menu has one.
    package func menuItem(index: Int64) -> ControlMenuItem? {
        menu.first { $0.index == index }
    }

    /// The value in words: the menu entry for menus, on/off for booleans.
    package var valueText: String? {
        guard let value else { return nil }
        return describe(value)
    }

    /// A value of this control in words.
    package func describe(_ value: ControlValue) -> String {
        guard case .integer(let number) = value else { return value.description }
        switch type {
        case .boolean: return number != 0 ? "on" : "off"
        case .menu, .integerMenu:
            return menuItem(index: number).map { "\($0.name)" } ?? String(number)
        case .bitmask: return "0x" + String(UInt64(bitPattern: number), radix: 16)
        default: return String(number)
        }
    }

    /// The allowed values in words, for messages: "0…255, step 1",
    /// "one of: 0 (Manual Mode), 3 (Aperture Priority Mode)", "0 or 1".
    package var allowedValuesText: String {
        switch type {
        case .boolean: return "0 or 1 (off/on, false/true)"
        case .menu, .integerMenu:
            return "one of: " + menu.map { "\($0.index) (\($0.name))" }.joined(separator: ", ")
        case .bitmask: return "a bit mask within 0x" + String(UInt64(bitPattern: maximum), radix: 16)
        case .button: return "any value (it is a button: setting it acts once)"
        case .string: return "text of \(minimum)…\(maximum) characters"
        default:
            return step > 1 ? "\(minimum)…\(maximum) in steps of \(step)" : "\(minimum)…\(maximum)"
        }
    }

    /// v4l2-ctl's name for a control label: lower-case letters and digits,
    /// each run of other characters turned into one underscore between
    /// words ("Gain, Automatic" → "gain_automatic").
    package static func canonicalName(_ label: String) -> String {
        var result = ""
        var pendingUnderscore = false
        for scalar in label.unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(Character(scalar)) {
                if pendingUnderscore { result.append("_") }
                pendingUnderscore = false
                result.unicodeScalars.append(contentsOf: String(scalar).lowercased().unicodeScalars)
            } else if !result.isEmpty {
                pendingUnderscore = true
            }
        }
        return result
    }
}

/// The controls of one class, in the order the driver lists them.
package struct ControlClassGroup: Sendable, Hashable {
    /// V4L2_CTRL_CLASS_* value.
    package let id: UInt32
    /// The driver's name for the class ("User Controls", "Camera Controls"),
    /// or a generic one where the driver has no class control.
    package let name: String
    package let controls: [DeviceControl]

    package init(id: UInt32, name: String, controls: [DeviceControl]) {
        self.id = id
        self.name = name
        self.controls = controls
    }

    /// A generic name for a class the driver does not name.
    static func defaultName(classID: UInt32) -> String {
        switch classID {
        case 0x0098_0000: return "User Controls"
        case 0x0099_0000: return "Codec Controls"
        case 0x009a_0000: return "Camera Controls"
        case 0x009b_0000: return "FM Radio Modulator Controls"
        case 0x009c_0000: return "Flash Controls"
        case 0x009d_0000: return "JPEG Compression Controls"
        case 0x009e_0000: return "Image Source Controls"
        case 0x009f_0000: return "Image Processing Controls"
        case 0x00a0_0000: return "Digital Video Controls"
        case 0x00a1_0000: return "FM Radio Receiver Controls"
        case 0x00a2_0000: return "RF Tuner Controls"
        case 0x00a3_0000: return "Detection Controls"
        case 0x00a4_0000: return "Stateless Codec Controls"
        case 0x00a5_0000: return "Colorimetry Controls"
        default: return "Controls of class 0x" + String(classID, radix: 16)
        }
    }
}
