/// Control names and IDs as users write them.
enum ControlNames {
    /// A control ID written as a number: decimal, or hex with 0x.
    static func parseID(_ text: String) -> UInt32? {
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            return UInt32(text.dropFirst(2), radix: 16)
        }
        guard let first = text.first, first.isNumber else { return nil }
        return UInt32(text)
    }

    /// Names close to `name`: those containing it or contained in it, and
    /// those within two edits; at most three.
    static func suggestions(for name: String, among names: [String]) -> [String] {
        let wanted = DeviceControl.canonicalName(name)
        guard !wanted.isEmpty else { return [] }
        var scored: [(Int, String)] = []
        for candidate in Set(names) {
            let distance = editDistance(wanted, candidate)
            if distance <= 2 {
                scored.append((distance, candidate))
            } else if candidate.contains(wanted) || (wanted.count >= 4 && wanted.contains(candidate) && candidate.count >= 4) {
                scored.append((3, candidate))
            }
        }
        return scored.sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }.prefix(3).map(\.1)
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// Turns the text of an assignment into a control's value, and checks a
/// value against the control's range.
enum ControlValueParser {
    /// Parses `text` for `control`:
    /// - integers: decimal or 0x hex, or `min`, `max`, `default`;
    /// - booleans: 1/0, on/off, true/false, yes/no;
    /// - menus: the entry's index or its name (any case; or as v4l2-ctl would write it);
    /// - integer menus: the entry's index, or `=N` for the entry whose value is N;
    /// - bit masks: decimal or 0x hex;
    /// - buttons: anything (setting one presses it);
    /// - strings: the text as it is.
    static func parse(_ text: String, for control: DeviceControl, device: String) throws(ControlError) -> ControlValue {
        let invalid = ControlError.invalidValue(device: device, control: control.name, value: text, allowed: control.allowedValuesText)
        let lowered = text.lowercased()
        switch control.type {
        case .string?:
            return .string(text)
        case .button?:
            return .integer(1)
        case .boolean?:
            switch lowered {
            case "1", "on", "true", "yes": return .integer(1)
            case "0", "off", "false", "no": return .integer(0)
            case "default": return .integer(control.defaultValue)
            default: throw invalid
            }
        case .menu?, .integerMenu?:
            if lowered == "default" { return .integer(control.defaultValue) }
            if let index = Int64(text) { return .integer(index) }
            if control.type == .integerMenu, text.hasPrefix("="), let number = Int64(text.dropFirst()) {
                guard let item = control.menu.first(where: { $0.integerValue == number }) else {
                    throw ControlError.outOfRange(device: device, control: control.name, value: text, allowed: control.allowedValuesText)
                }
                return .integer(item.index)
            }
            let canonical = DeviceControl.canonicalName(text)
            if let item = control.menu.first(where: { $0.name.lowercased() == lowered })
                ?? control.menu.first(where: { DeviceControl.canonicalName($0.name) == canonical && !canonical.isEmpty }) {
                return .integer(item.index)
            }
            throw invalid
        case .integer?, .integer64?, .bitmask?:
            switch lowered {
            case "min", "minimum": return .integer(control.minimum)
            case "max", "maximum": return .integer(control.maximum)
            case "default": return .integer(control.defaultValue)
            default: break
            }
            if let number = parseInteger(text) { return .integer(number) }
            throw invalid
        default:
            throw ControlError.notSupported(
                device: device, feature: "setting \(control.name)",
                reason: "it is a compound control (type \(control.rawType)), which capctl cannot set")
        }
    }

    /// Decimal (with sign) or 0x hex.
    static func parseInteger(_ text: String) -> Int64? {
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            return UInt64(text.dropFirst(2), radix: 16).map { Int64(bitPattern: $0) }
        }
        return Int64(text)
    }

    /// Throws `.outOfRange` unless `value` is one the control accepts.
    static func checkRange(_ value: ControlValue, for control: DeviceControl, device: String) throws(ControlError) {
        let outOfRange = ControlError.outOfRange(device: device, control: control.name, value: control.describeRaw(value), allowed: control.allowedValuesText)
        switch (control.type, value) {
        case (.string?, .string(let text)):
            let length = Int64(text.utf8.count)
            guard length >= control.minimum, length <= control.maximum else { throw outOfRange }
        case (.button?, .integer):
            return
        case (.boolean?, .integer(let number)):
            guard number == 0 || number == 1 else { throw outOfRange }
        case (.menu?, .integer(let index)), (.integerMenu?, .integer(let index)):
            guard control.menuItem(index: index) != nil else { throw outOfRange }
        case (.bitmask?, .integer(let mask)):
            guard UInt64(bitPattern: mask) & ~UInt64(bitPattern: control.maximum) == 0 else { throw outOfRange }
        case (.integer?, .integer(let number)), (.integer64?, .integer(let number)):
            guard number >= control.minimum, number <= control.maximum else { throw outOfRange }
            if control.step > 1 {
                let offset = UInt64(bitPattern: number &- control.minimum)
                if offset % control.step != 0 {
                    let below = number - Int64(offset % control.step)
                    let above = below + Int64(control.step)
                    let nearest = above <= control.maximum ? "\(below) or \(above)" : "\(below)"
                    throw ControlError.outOfRange(
                        device: device, control: control.name, value: String(number),
                        allowed: "\(control.allowedValuesText) (nearest: \(nearest))")
                }
            }
        default:
            throw ControlError.invalidValue(device: device, control: control.name, value: value.description, allowed: control.allowedValuesText)
        }
    }
}

extension DeviceControl {
    /// A value as the user gave it, for messages.
    func describeRaw(_ value: ControlValue) -> String {
        switch value {
        case .integer(let number): return String(number)
        case .string(let text): return "'\(text)'"
        }
    }
}
