/// A box of the ISO base media file format (MP4, QuickTime): a four-letter
/// type and either a payload or child boxes. Only the boxes the writer and
/// `info` need to look into are parsed as containers; everything else is
/// kept as bytes and written back unchanged.
struct MovieBox: Equatable {
    var type: String
    /// The payload of a leaf box (everything after the 8-byte header).
    var payload: [UInt8]
    /// The children of a container box.
    var children: [MovieBox]?

    static let containerTypes: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "edts", "mvex", "dinf"]

    init(type: String, payload: [UInt8]) {
        self.type = type
        self.payload = payload
        self.children = nil
    }

    init(type: String, children: [MovieBox]) {
        self.type = type
        self.payload = []
        self.children = children
    }

    /// Parses the boxes in `bytes`, descending into known containers.
    static func parseList(_ bytes: ArraySlice<UInt8>) throws(WriterError) -> [MovieBox] {
        var boxes = [MovieBox]()
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            guard bytes.endIndex - offset >= 8 else { throw .malformedOutput("a box header is cut short") }
            var size = UInt64(BigEndian.uint32(bytes, at: offset))
            let type = BigEndian.fourCC(bytes, at: offset + 4)
            var header = 8
            if size == 1 {
                guard bytes.endIndex - offset >= 16 else { throw .malformedOutput("a box header is cut short") }
                size = BigEndian.uint64(bytes, at: offset + 8)
                header = 16
            } else if size == 0 {
                size = UInt64(bytes.endIndex - offset)
            }
            guard size >= UInt64(header), size <= UInt64(bytes.endIndex - offset) else {
                throw .malformedOutput("box '\(type)' has an impossible size \(size)")
            }
            let body = bytes[(offset + header)..<(offset + Int(size))]
            if containerTypes.contains(type) {
                boxes.append(MovieBox(type: type, children: try parseList(body)))
            } else {
                boxes.append(MovieBox(type: type, payload: Array(body)))
            }
            offset += Int(size)
        }
        return boxes
    }

    /// The box as bytes, header included.
    func serialized() -> [UInt8] {
        var body = [UInt8]()
        if let children {
            for child in children { body += child.serialized() }
        } else {
            body = payload
        }
        var out = [UInt8]()
        out.reserveCapacity(body.count + 8)
        BigEndian.append(UInt32(body.count + 8), to: &out)
        out += Array(type.utf8.prefix(4))
        out += body
        return out
    }

    var serializedSize: Int {
        if let children { return 8 + children.reduce(0) { $0 + $1.serializedSize } }
        return 8 + payload.count
    }

    func child(_ type: String) -> MovieBox? { children?.first { $0.type == type } }

    /// The first descendant along a path of types: `box.find("mdia", "mdhd")`.
    func find(_ path: String...) -> MovieBox? {
        var box = self
        for type in path {
            guard let next = box.child(type) else { return nil }
            box = next
        }
        return box
    }

    /// Applies `body` to every box in this tree, depth first.
    mutating func visit(_ body: (inout MovieBox) throws(WriterError) -> Void) throws(WriterError) {
        try body(&self)
        if children != nil {
            for index in children!.indices { try children![index].visit(body) }
        }
    }
}

/// Big-endian reading and writing of the integers boxes are made of.
enum BigEndian {
    static func uint16(_ bytes: [UInt8], at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    static func uint32(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 { uint32(bytes[...], at: offset) }

    static func uint64(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt64 {
        UInt64(uint32(bytes, at: offset)) << 32 | UInt64(uint32(bytes, at: offset + 4))
    }

    static func uint64(_ bytes: [UInt8], at offset: Int) -> UInt64 { uint64(bytes[...], at: offset) }

    static func fourCC(_ bytes: ArraySlice<UInt8>, at offset: Int) -> String {
        String(decoding: bytes[offset..<(offset + 4)].map { (32...126).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        append(UInt32(value >> 32), to: &bytes)
        append(UInt32(value & 0xffff_ffff), to: &bytes)
    }

    static func append(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 8), UInt8(value & 0xff)]
    }

    static func put(_ value: UInt32, into bytes: inout [UInt8], at offset: Int) {
        bytes[offset] = UInt8(value >> 24)
        bytes[offset + 1] = UInt8(value >> 16 & 0xff)
        bytes[offset + 2] = UInt8(value >> 8 & 0xff)
        bytes[offset + 3] = UInt8(value & 0xff)
    }

    static func put(_ value: UInt16, into bytes: inout [UInt8], at offset: Int) {
        bytes[offset] = UInt8(value >> 8)
        bytes[offset + 1] = UInt8(value & 0xff)
    }

    static func put(_ value: UInt64, into bytes: inout [UInt8], at offset: Int) {
        put(UInt32(value >> 32), into: &bytes, at: offset)
        put(UInt32(value & 0xffff_ffff), into: &bytes, at: offset + 4)
    }
}
