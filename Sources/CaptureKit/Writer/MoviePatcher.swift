/// One entry of a track's edit list: `duration` of movie time showing the
/// media from `mediaTime` on, or nothing at all (an empty edit) when
/// `mediaTime` is nil. Durations are in the movie time scale, media times in
/// the track's media time scale.
struct EditEntry: Equatable {
    var duration: UInt64
    var mediaTime: Int64?
}

/// What the writer changes in a track's header after the muxer is done.
struct TrackPatch {
    /// Edits replacing the muxer's, or nil to keep them.
    var edits: [EditEntry]?
    var enabled: Bool
    var alternateGroup: UInt16
}

/// Rewrites the movie box ('moov') of an MP4/QuickTime file the muxer has
/// finished: the movie time scale, edit lists, track durations, enabled
/// flags and alternate groups; and moves the index in front of the media
/// data for network use. Works on the file's own descriptor.
struct MoviePatcher {
    let file: OutputFile

    /// A top-level box: where it starts, how long it is.
    struct TopLevel {
        var type: String
        var offset: Int64
        var size: Int64
    }

    func topLevelBoxes() throws(WriterError) -> [TopLevel] {
        let end = try io { () throws(SystemCallError) in try file.size() }
        var boxes = [TopLevel]()
        var offset: Int64 = 0
        while offset + 8 <= end {
            let header = try io { () throws(SystemCallError) in try file.read(at: offset, count: 8) }
            var size = Int64(BigEndian.uint32(header, at: 0))
            let type = BigEndian.fourCC(header[...], at: 4)
            if size == 1 {
                let large = try io { () throws(SystemCallError) in try file.read(at: offset + 8, count: 8) }
                size = Int64(bitPattern: BigEndian.uint64(large, at: 0))
            } else if size == 0 {
                size = end - offset
            }
            guard size >= 8, offset + size <= end else { throw .malformedOutput("top-level box '\(type)' runs past the end of the file") }
            boxes.append(TopLevel(type: type, offset: offset, size: size))
            offset += size
        }
        return boxes
    }

    /// Reads the movie box.
    func readMovie(_ boxes: [TopLevel]) throws(WriterError) -> (TopLevel, MovieBox) {
        guard let entry = boxes.first(where: { $0.type == "moov" }) else { throw .malformedOutput("the file has no movie box") }
        let bytes = try io { () throws(SystemCallError) in try file.read(at: entry.offset, count: Int(entry.size)) }
        guard let movie = try MovieBox.parseList(bytes[...]).first else { throw .malformedOutput("the movie box is empty") }
        return (entry, movie)
    }

    /// Applies the movie time scale and the track patches (by track ID) to
    /// a movie box. `totalDuration` is the movie's length in the new time
    /// scale, or nil to rescale the existing one.
    static func patch(_ movie: inout MovieBox, timescale newScale: UInt32?, totalDuration: UInt64?, tracks: [UInt32: TrackPatch]) throws(WriterError) {
        guard var children = movie.children, let mvhdIndex = children.firstIndex(where: { $0.type == "mvhd" }) else {
            throw .malformedOutput("the movie box has no header")
        }
        let (oldScale, oldDuration) = MovieHeader.timing(children[mvhdIndex].payload, trackHeader: false)
        let scale = newScale ?? oldScale
        func rescale(_ value: UInt64) -> UInt64 {
            guard oldScale != 0, scale != oldScale else { return value }
            return UInt64((Double(value) * Double(scale) / Double(oldScale)).rounded())
        }
        children[mvhdIndex].payload = MovieHeader.setting(children[mvhdIndex].payload, trackHeader: false,
                                                          timescale: scale, duration: totalDuration ?? rescale(oldDuration))
        for index in children.indices {
            switch children[index].type {
            case "trak":
                try patchTrack(&children[index], tracks: tracks, rescale: rescale)
            case "mvex":
                if var mvex = children[index].children, let mehd = mvex.firstIndex(where: { $0.type == "mehd" }) {
                    mvex[mehd].payload = MovieHeader.settingFragmentDuration(mvex[mehd].payload, rescale)
                    children[index].children = mvex
                }
            default: break
            }
        }
        movie.children = children
    }

    private static func patchTrack(_ trak: inout MovieBox, tracks: [UInt32: TrackPatch], rescale: (UInt64) -> UInt64) throws(WriterError) {
        guard var children = trak.children, let tkhdIndex = children.firstIndex(where: { $0.type == "tkhd" }) else { return }
        var tkhd = children[tkhdIndex].payload
        let trackID = MovieHeader.trackID(tkhd)
        let patch = tracks[trackID]
        var duration = MovieHeader.timing(tkhd, trackHeader: true).duration
        // Edit lists: replaced, or rescaled to the new movie time scale.
        if let edits = patch?.edits {
            children.removeAll { $0.type == "edts" }
            if !edits.isEmpty {
                children.insert(MovieBox(type: "edts", children: [MovieBox(type: "elst", payload: EditList.payload(edits))]), at: tkhdIndex + 1)
            }
            duration = edits.reduce(0) { $0 + $1.duration }
        } else {
            if let edtsIndex = children.firstIndex(where: { $0.type == "edts" }), var edts = children[edtsIndex].children,
               let elstIndex = edts.firstIndex(where: { $0.type == "elst" }) {
                let entries = EditList.entries(edts[elstIndex].payload).map { EditEntry(duration: rescale($0.duration), mediaTime: $0.mediaTime) }
                edts[elstIndex].payload = EditList.payload(entries)
                children[edtsIndex].children = edts
            }
            duration = rescale(duration)
        }
        tkhd = MovieHeader.setting(tkhd, trackHeader: true, timescale: nil, duration: duration)
        if let patch {
            tkhd = MovieHeader.settingTrackFlags(tkhd, enabled: patch.enabled, alternateGroup: patch.alternateGroup)
        }
        children[tkhdIndex].payload = tkhd
        trak.children = children
    }

    /// Adds `shift` to every chunk offset, widening 32-bit tables to 64-bit
    /// ones where an offset would no longer fit.
    static func shiftChunkOffsets(_ movie: inout MovieBox, by shift: UInt64) throws(WriterError) {
        try movie.visit { (box: inout MovieBox) throws(WriterError) in
            switch box.type {
            case "stco":
                let offsets = ChunkOffsets.read32(box.payload).map { $0 + shift }
                if offsets.allSatisfy({ $0 <= UInt64(UInt32.max) }) {
                    box.payload = ChunkOffsets.payload32(offsets)
                } else {
                    box.type = "co64"
                    box.payload = ChunkOffsets.payload64(offsets)
                }
            case "co64":
                box.payload = ChunkOffsets.payload64(ChunkOffsets.read64(box.payload).map { $0 + shift })
            default: break
            }
        }
    }

    /// Patches the movie box, adds `chapters` to it (see `Chapters`), and,
    /// when `faststart`, moves it in front of the media data (after
    /// 'ftyp'), shifting the media and its chunk offsets.
    func finish(timescale: UInt32?, totalDuration: UInt64?, tracks: [UInt32: TrackPatch], faststart: Bool,
                chapters: [MediaChapter] = []) throws(WriterError) {
        let boxes = try topLevelBoxes()
        var (entry, movie) = try readMovie(boxes)
        try MoviePatcher.patch(&movie, timescale: timescale, totalDuration: totalDuration, tracks: tracks)
        Chapters.addNeroChapters(chapters, to: &movie)
        let isLast = boxes.last?.offset == entry.offset
        let firstMediaIndex = boxes.firstIndex { $0.type != "ftyp" } ?? 0
        let insertAt = boxes[firstMediaIndex].offset
        if faststart, isLast, insertAt < entry.offset {
            // Shift chunk offsets by the new movie box's size; widening a
            // table changes that size, so settle it first.
            var shifted = movie
            var size = movie.serializedSize
            for _ in 0..<4 {
                shifted = movie
                try MoviePatcher.shiftChunkOffsets(&shifted, by: UInt64(size))
                if shifted.serializedSize == size { break }
                size = shifted.serializedSize
            }
            guard shifted.serializedSize == size else { throw .malformedOutput("the chunk offset tables do not settle") }
            try moveRegion(from: insertAt, count: entry.offset - insertAt, by: Int64(size))
            try io { () throws(SystemCallError) in
                try file.write(shifted.serialized(), at: insertAt)
                try file.truncate(to: entry.offset + Int64(size))
            }
        } else {
            let bytes = movie.serialized()
            try io { () throws(SystemCallError) in
                if isLast {
                    try file.write(bytes, at: entry.offset)
                    try file.truncate(to: entry.offset + Int64(bytes.count))
                } else if bytes.count == Int(entry.size) {
                    try file.write(bytes, at: entry.offset)
                } else if bytes.count + 8 <= Int(entry.size) {
                    // Fill what is left with a 'free' box.
                    var padded = bytes
                    BigEndian.append(UInt32(Int(entry.size) - bytes.count), to: &padded)
                    padded += Array("free".utf8)
                    padded += [UInt8](repeating: 0, count: Int(entry.size) - padded.count)
                    try file.write(padded, at: entry.offset)
                } else {
                    throw SystemCallError(call: "rewrite movie box", errno: 27 /* EFBIG */)
                }
            }
        }
    }

    /// Patches a movie box in place without changing its size (the empty
    /// movie box at the head of a fragmented file).
    func patchInPlace(timescale: UInt32?, tracks: [UInt32: TrackPatch]) throws(WriterError) {
        let boxes = try topLevelBoxes()
        var (entry, movie) = try readMovie(boxes)
        try MoviePatcher.patch(&movie, timescale: timescale, totalDuration: nil, tracks: tracks)
        let bytes = movie.serialized()
        guard bytes.count == Int(entry.size) else { throw .malformedOutput("the fragmented movie header would change size") }
        try io { () throws(SystemCallError) in try file.write(bytes, at: entry.offset) }
    }

    /// Moves `count` bytes at `start` forward by `shift`, last block first so
    /// nothing is overwritten before it is read.
    private func moveRegion(from start: Int64, count: Int64, by shift: Int64) throws(WriterError) {
        let block: Int64 = 1 << 20
        var remaining = count
        while remaining > 0 {
            let length = min(block, remaining)
            let offset = start + remaining - length
            try io { () throws(SystemCallError) in
                let bytes = try file.read(at: offset, count: Int(length))
                try file.write(bytes, at: offset + shift)
            }
            remaining -= length
        }
    }

    private func io<T>(_ body: () throws(SystemCallError) -> T) throws(WriterError) -> T {
        do { return try body() } catch { throw .io(path: file.path, error: error) }
    }
}

/// Field access for 'mvhd', 'tkhd', 'mdhd' and 'mehd', in both versions.
enum MovieHeader {
    /// The time scale and duration of an 'mvhd' or 'mdhd' (for 'tkhd' the
    /// time scale is 0: tracks use the movie's).
    static func timing(_ payload: [UInt8], trackHeader: Bool) -> (timescale: UInt32, duration: UInt64) {
        let version = payload.first ?? 0
        if trackHeader {
            return version == 1 ? (0, BigEndian.uint64(payload, at: 28)) : (0, UInt64(BigEndian.uint32(payload, at: 20)))
        }
        if version == 1 {
            return (BigEndian.uint32(payload, at: 20), BigEndian.uint64(payload, at: 24))
        }
        return (BigEndian.uint32(payload, at: 12), UInt64(BigEndian.uint32(payload, at: 16)))
    }

    static func trackID(_ tkhd: [UInt8]) -> UInt32 {
        (tkhd.first ?? 0) == 1 ? BigEndian.uint32(tkhd, at: 20) : BigEndian.uint32(tkhd, at: 12)
    }

    /// Sets the duration (and, for 'mvhd', the time scale), moving to version
    /// 1 when the duration needs 64 bits.
    static func setting(_ payload: [UInt8], trackHeader: Bool, timescale: UInt32?, duration: UInt64) -> [UInt8] {
        var bytes = payload
        if bytes[0] == 0 && duration > UInt64(UInt32.max) {
            // Version 0 → 1: creation and modification times and the
            // duration widen to 64 bits.
            var wide: [UInt8] = [1, bytes[1], bytes[2], bytes[3]]
            BigEndian.append(UInt64(BigEndian.uint32(bytes, at: 4)), to: &wide)
            BigEndian.append(UInt64(BigEndian.uint32(bytes, at: 8)), to: &wide)
            if trackHeader {
                wide += bytes[12..<20] // track ID, reserved
                BigEndian.append(UInt64(0), to: &wide)
                wide += bytes[24...]
            } else {
                wide += bytes[12..<16] // time scale
                BigEndian.append(UInt64(0), to: &wide)
                wide += bytes[20...]
            }
            bytes = wide
        }
        let version1 = bytes[0] == 1
        if trackHeader {
            if version1 { BigEndian.put(duration, into: &bytes, at: 28) } else { BigEndian.put(UInt32(duration), into: &bytes, at: 20) }
        } else {
            if version1 {
                if let timescale { BigEndian.put(timescale, into: &bytes, at: 20) }
                BigEndian.put(duration, into: &bytes, at: 24)
            } else {
                if let timescale { BigEndian.put(timescale, into: &bytes, at: 12) }
                BigEndian.put(UInt32(duration), into: &bytes, at: 16)
            }
        }
        return bytes
    }

    /// The offset of the fields after the duration in a 'tkhd'.
    private static func tkhdTail(_ tkhd: [UInt8]) -> Int { tkhd[0] == 1 ? 36 : 24 }

    static func alternateGroup(_ tkhd: [UInt8]) -> UInt16 { BigEndian.uint16(tkhd, at: tkhdTail(tkhd) + 10) }

    static func isEnabled(_ tkhd: [UInt8]) -> Bool { tkhd[3] & 1 != 0 }

    static func settingTrackFlags(_ tkhd: [UInt8], enabled: Bool, alternateGroup: UInt16) -> [UInt8] {
        var bytes = tkhd
        bytes[3] = enabled ? bytes[3] | 1 : bytes[3] & ~1
        BigEndian.put(alternateGroup, into: &bytes, at: tkhdTail(tkhd) + 10)
        return bytes
    }

    static func settingFragmentDuration(_ mehd: [UInt8], _ rescale: (UInt64) -> UInt64) -> [UInt8] {
        var bytes = mehd
        if bytes[0] == 1 {
            BigEndian.put(rescale(BigEndian.uint64(bytes, at: 4)), into: &bytes, at: 4)
        } else {
            BigEndian.put(UInt32(min(rescale(UInt64(BigEndian.uint32(bytes, at: 4))), UInt64(UInt32.max))), into: &bytes, at: 4)
        }
        return bytes
    }

    /// The media time scale of a 'trak' (from its 'mdhd').
    static func mediaTimescale(_ trak: MovieBox) -> UInt32? {
        guard let mdhd = trak.find("mdia", "mdhd") else { return nil }
        return timing(mdhd.payload, trackHeader: false).timescale
    }
}

/// The 'elst' box.
enum EditList {
    static func entries(_ payload: [UInt8]) -> [EditEntry] {
        guard payload.count >= 8 else { return [] }
        let version = payload[0]
        let count = Int(BigEndian.uint32(payload, at: 4))
        let size = version == 1 ? 20 : 12
        var entries = [EditEntry]()
        var offset = 8
        for _ in 0..<count where offset + size <= payload.count {
            if version == 1 {
                let media = Int64(bitPattern: BigEndian.uint64(payload, at: offset + 8))
                entries.append(EditEntry(duration: BigEndian.uint64(payload, at: offset), mediaTime: media == -1 ? nil : media))
            } else {
                let media = Int32(bitPattern: BigEndian.uint32(payload, at: offset + 4))
                entries.append(EditEntry(duration: UInt64(BigEndian.uint32(payload, at: offset)), mediaTime: media == -1 ? nil : Int64(media)))
            }
            offset += size
        }
        return entries
    }

    static func payload(_ entries: [EditEntry]) -> [UInt8] {
        let wide = entries.contains { $0.duration > UInt64(UInt32.max) || ($0.mediaTime ?? 0) > Int64(Int32.max) }
        var bytes: [UInt8] = [wide ? 1 : 0, 0, 0, 0]
        BigEndian.append(UInt32(entries.count), to: &bytes)
        for entry in entries {
            let media = entry.mediaTime ?? -1
            if wide {
                BigEndian.append(entry.duration, to: &bytes)
                BigEndian.append(UInt64(bitPattern: media), to: &bytes)
            } else {
                BigEndian.append(UInt32(entry.duration), to: &bytes)
                BigEndian.append(UInt32(bitPattern: Int32(media)), to: &bytes)
            }
            BigEndian.append(UInt32(0x0001_0000), to: &bytes) // rate 1.0
        }
        return bytes
    }
}

/// The 'stco' and 'co64' chunk offset tables.
enum ChunkOffsets {
    static func read32(_ payload: [UInt8]) -> [UInt64] {
        let count = Int(BigEndian.uint32(payload, at: 4))
        return (0..<count).map { UInt64(BigEndian.uint32(payload, at: 8 + 4 * $0)) }
    }

    static func read64(_ payload: [UInt8]) -> [UInt64] {
        let count = Int(BigEndian.uint32(payload, at: 4))
        return (0..<count).map { BigEndian.uint64(payload, at: 8 + 8 * $0) }
    }

    static func payload32(_ offsets: [UInt64]) -> [UInt8] {
        var bytes: [UInt8] = [0, 0, 0, 0]
        bytes.reserveCapacity(8 + 4 * offsets.count)
        BigEndian.append(UInt32(offsets.count), to: &bytes)
        for offset in offsets { BigEndian.append(UInt32(offset), to: &bytes) }
        return bytes
    }

    static func payload64(_ offsets: [UInt64]) -> [UInt8] {
        var bytes: [UInt8] = [0, 0, 0, 0]
        bytes.reserveCapacity(8 + 8 * offsets.count)
        BigEndian.append(UInt32(offsets.count), to: &bytes)
        for offset in offsets { BigEndian.append(offset, to: &bytes) }
        return bytes
    }
}
