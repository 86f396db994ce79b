#if canImport(Glibc)
import Glibc
#endif

extension String {
    /// `text` formatted as C's printf does (`%.2f`, `%02d`): String(format:)'s
    /// place for numbers, which is Foundation's, and capctl links only
    /// FoundationEssentials. Only numeric conversions: strings are interpolated.
    init(cFormat format: String, _ arguments: CVarArg...) {
        var capacity = 64
        while true {
            var buffer = [CChar](repeating: 0, count: capacity)
            // A va_list is used up by one call, so each attempt makes its own.
            let needed = withVaList(arguments) { vsnprintf(&buffer, capacity, format, $0) }
            guard needed >= 0 else { self = format; return }
            if Int(needed) < capacity {
                self = String(decoding: buffer[..<Int(needed)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return
            }
            capacity = Int(needed) + 1
        }
    }
}
