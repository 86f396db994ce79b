/// Reading a fragmented MP4/QuickTime file (an initial movie box with
/// 'mvex', then 'moof'+'mdat' pairs) into the sample tables a regular movie
/// box holds: where each sample is, how long it lasts, which are sync
/// samples. What `MovieDefragmenter` turns into one 'moov'.
///
/// Facts of the format used here (ISO/IEC 14496-12): a 'traf' names its
/// track in 'tfhd', which may give a base data offset (else the enclosing
/// 'moof' when default-base-is-moof is set, or for the first 'traf' of a
/// fragment; else where the previous 'traf' data ended) and per-sample
/// defaults (else 'trex' in 'mvex'); 'tfdt' gives the decode time of its
/// first sample (else it follows the previous fragment); each 'trun' lists
/// samples whose data lie back to back from its data offset (else from where
/// the previous run ended), with optional duration, size, flags and
/// composition offset (signed in version 1). A sample is a sync sample when
/// its flags do not set sample_is_non_sync_sample (bit 16).
struct FragmentIndex {
    /// A top-level box of the file.
    struct TopLevelBox: Equatable {
        var type: String
        var offset: Int64
        /// The size its header states (the rest of the file for size 0).
        var size: Int64
        var headerSize: Int
        var end: Int64 { offset + size }
    }

    /// One track's samples in decode order.
    struct TrackSamples {
        struct Chunk: Equatable {
            var offset: Int64
            var sampleCount: Int
            var descriptionIndex: UInt32
        }

        var trackID: UInt32
        var sizes: [UInt32] = []
        /// Decode times in the track's media time scale, as the fragments state them.
        var decodeTimes: [Int64] = []
        /// Durations as the runs state them (the last sample of a fragment
        /// keeps its own; the others are the step to the next sample).
        var durations: [UInt32] = []
        var compositionOffsets: [Int32] = []
        /// 1-based numbers of the sync samples.
        var syncSamples: [UInt32] = []
        var chunks: [Chunk] = []
        /// Where the next fragment's decode times continue without a 'tfdt'.
        var nextDecodeTime: Int64 = 0
        /// Set once a sample of this track is missing (its data past the
        /// end of the file): later samples are not taken.
        var isCut = false

        var count: Int { sizes.count }
        var hasCompositionOffsets: Bool { compositionOffsets.contains { $0 != 0 } }

        /// The duration of each sample on a regular timeline: the step to
        /// the next decode time, and for the last its own.
        func timelineDurations() -> [UInt32] {
            guard !sizes.isEmpty else { return [] }
            var result = [UInt32]()
            result.reserveCapacity(count)
            for index in 0..<(count - 1) {
                let step = decodeTimes[index + 1] - decodeTimes[index]
                result.append(UInt32(clamping: max(0, step)))
            }
            result.append(durations[count - 1])
            return result
        }

        /// The media duration the sample table states: the sum of `timelineDurations()`.
        var mediaDuration: UInt64 {
            guard let first = decodeTimes.first, let last = decodeTimes.last, let lastDuration = durations.last else { return 0 }
            return UInt64(max(0, last - first)) + UInt64(lastDuration)
        }
    }

    /// Defaults from a track's 'trex'.
    struct TrackDefaults {
        var descriptionIndex: UInt32 = 1
        var duration: UInt32 = 0
        var size: UInt32 = 0
        var flags: UInt32 = 0
    }

    var fileSize: Int64
    /// The complete top-level boxes, in order.
    var boxes: [TopLevelBox]
    /// A box whose stated size runs past the end of the file.
    var cutBox: TopLevelBox?
    /// The first movie box, and its contents.
    var movieBox: TopLevelBox
    var movie: MovieBox
    /// Whether the movie box announces fragments ('mvex').
    var isFragmented: Bool
    /// Where the first fragment ('moof') starts.
    var firstFragmentOffset: Int64?
    /// Fragments whose 'moof' is complete (the last one's media data may be cut).
    var fragmentCount: Int
    /// Tracks by track ID, in the movie box's order.
    var tracks: [TrackSamples]
    /// The end of the media data the tables use: the end of the last
    /// complete fragment, or of the last whole sample of a cut one.
    var mediaEnd: Int64
    /// Bytes after `mediaEnd` that hold nothing the tables use (a cut
    /// fragment's rest, 'mfra', a movie box left by a finish that stopped).
    var unusedTailBytes: Int64 { fileSize - mediaEnd }
    /// The fragmented file's closing index ('mfra'), written when a fragmented recording finished.
    var hasFragmentIndexBox: Bool
    /// A movie box after the fragments: a conversion to a regular movie that did not complete.
    var hasTrailingMovie: Bool
    /// The session log capctl's writer keeps after the movie box, when there is one.
    var sessionLog: SessionLog?
    /// The top-level box holding the session log.
    var sessionLogBox: TopLevelBox?
    /// The chapters capctl's writer keeps after the session log, and the box holding them.
    var chapterLog: ChapterLog?
    var chapterLogBox: TopLevelBox?

    /// Why a file cannot be read as a fragmented movie.
    enum Problem: Error, Equatable {
        case notAMovie(String)
        case noMovieBox
        case unfragmentedWithoutIndex
        case damaged(String)
    }

    // MARK: Reading

    /// Reads the file's boxes through its descriptor.
    static func read(_ file: OutputFile) throws(ReadFailure) -> FragmentIndex {
        let size: Int64
        do { size = try file.size() } catch { throw .io(error) }
        return try read(size: size) { offset, count throws(SystemCallError) in
            try file.read(at: offset, count: Int(min(Int64(count), max(0, size - offset))))
        }
    }

    /// Walks the top-level boxes of a file of `size` bytes read through
    /// `read(offset, count)` (which may answer fewer bytes at the end).
    static func read(size: Int64, _ read: (Int64, Int) throws(SystemCallError) -> [UInt8]) throws(ReadFailure) -> FragmentIndex {
        var boxes = [TopLevelBox]()
        var cutBox: TopLevelBox?
        var offset: Int64 = 0
        while offset + 8 <= size {
            let header = try io { () throws(SystemCallError) in try read(offset, 16) }
            guard header.count >= 8 else { break }
            var boxSize = Int64(BigEndian.uint32(header, at: 0))
            let type = BigEndian.fourCC(header[...], at: 4)
            var headerSize = 8
            if boxes.isEmpty, !["ftyp", "moov", "mdat", "free", "skip", "wide", "styp", "pnot", "uuid"].contains(type) {
                throw .problem(.notAMovie("it does not begin with an ISO base media box"))
            }
            if boxSize == 1 {
                guard header.count >= 16 else { cutBox = TopLevelBox(type: type, offset: offset, size: size - offset, headerSize: 16); break }
                boxSize = Int64(bitPattern: BigEndian.uint64(header, at: 8))
                headerSize = 16
            } else if boxSize == 0 {
                boxSize = size - offset
            }
            guard boxSize >= Int64(headerSize) else {
                throw .problem(.damaged("box '\(type)' at byte \(offset) states an impossible size"))
            }
            let box = TopLevelBox(type: type, offset: offset, size: boxSize, headerSize: headerSize)
            if offset + boxSize > size {
                cutBox = box
                break
            }
            boxes.append(box)
            offset += boxSize
        }
        if boxes.isEmpty && cutBox == nil { throw .problem(.notAMovie(size == 0 ? "it is empty" : "it holds no ISO base media box")) }
        guard let movieEntry = boxes.first(where: { $0.type == "moov" }) else {
            if boxes.contains(where: { $0.type == "mdat" }) || cutBox?.type == "mdat" { throw .problem(.unfragmentedWithoutIndex) }
            if boxes.contains(where: { $0.type == "moof" }) || cutBox?.type == "moof" { throw .problem(.noMovieBox) }
            throw .problem(.noMovieBox)
        }
        guard movieEntry.size < 256 << 20 else { throw .problem(.damaged("the movie box is implausibly large")) }
        let movieBytes = try io { () throws(SystemCallError) in try read(movieEntry.offset, Int(movieEntry.size)) }
        guard movieBytes.count == Int(movieEntry.size) else { throw .problem(.damaged("the movie box is cut short")) }
        let movie: MovieBox
        do {
            guard let parsed = try MovieBox.parseList(movieBytes[...]).first else { throw WriterError.malformedOutput("empty") }
            movie = parsed
        } catch {
            throw .problem(.damaged("the movie box cannot be read (\(error))"))
        }

        var index = FragmentIndex(
            fileSize: size, boxes: boxes, cutBox: cutBox, movieBox: movieEntry, movie: movie,
            isFragmented: movie.child("mvex") != nil, firstFragmentOffset: nil, fragmentCount: 0, tracks: [],
            mediaEnd: movieEntry.end, hasFragmentIndexBox: false, hasTrailingMovie: false, sessionLog: nil, sessionLogBox: nil,
            chapterLog: nil, chapterLogBox: nil)
        var defaults = [UInt32: TrackDefaults]()
        for trak in movie.children ?? [] where trak.type == "trak" {
            guard let tkhd = trak.child("tkhd") else { continue }
            let trackID = MovieHeader.trackID(tkhd.payload)
            index.tracks.append(TrackSamples(trackID: trackID))
            defaults[trackID] = TrackDefaults()
        }
        for trex in movie.child("mvex")?.children ?? [] where trex.type == "trex" && trex.payload.count >= 24 {
            let payload = trex.payload
            defaults[BigEndian.uint32(payload, at: 4)] = TrackDefaults(
                descriptionIndex: BigEndian.uint32(payload, at: 8), duration: BigEndian.uint32(payload, at: 12),
                size: BigEndian.uint32(payload, at: 16), flags: BigEndian.uint32(payload, at: 20))
        }

        // The session log, right after the movie box.
        if let position = boxes.firstIndex(of: movieEntry), position + 1 < boxes.count {
            let next = boxes[position + 1]
            if next.type == "free", next.size <= 1 << 20, next.size > Int64(next.headerSize) + 16 {
                let bytes = try io { () throws(SystemCallError) in try read(next.offset + Int64(next.headerSize), Int(next.size) - next.headerSize) }
                if let log = SessionLog(payload: bytes) {
                    index.sessionLog = log
                    index.sessionLogBox = next
                }
            }
        }
        // The chapter log, right after the session log.
        if let logBox = index.sessionLogBox, let position = boxes.firstIndex(of: logBox), position + 1 < boxes.count {
            let next = boxes[position + 1]
            if next.type == "free", next.size <= 1 << 20, next.size > Int64(next.headerSize) + 16 {
                let bytes = try io { () throws(SystemCallError) in try read(next.offset + Int64(next.headerSize), Int(next.size) - next.headerSize) }
                if let log = ChapterLog(payload: bytes) {
                    index.chapterLog = log
                    index.chapterLogBox = next
                }
            }
        }

        guard index.isFragmented else { return index }
        var trackPosition = [UInt32: Int]()
        for (position, track) in index.tracks.enumerated() { trackPosition[track.trackID] = position }
        var sawMovie = false
        var lastUsedEnd = movieEntry.end
        var previous: TopLevelBox?
        for box in boxes + (cutBox.map { [$0] } ?? []) {
            defer { previous = box }
            switch box.type {
            case "moov":
                if sawMovie, index.firstFragmentOffset != nil { index.hasTrailingMovie = true }
                sawMovie = true
            case "mfra":
                index.hasFragmentIndexBox = true
            case "moof":
                guard box != cutBox else { break }
                guard box.offset > movieEntry.offset else { throw .problem(.damaged("a fragment comes before the movie box")) }
                guard box.size < 64 << 20 else { throw .problem(.damaged("a fragment header is implausibly large")) }
                let bytes = try io { () throws(SystemCallError) in try read(box.offset, Int(box.size)) }
                guard bytes.count == Int(box.size) else { throw .problem(.damaged("a fragment header is cut short")) }
                if index.firstFragmentOffset == nil { index.firstFragmentOffset = box.offset }
                index.fragmentCount += 1
                let before = index.tracks.map(\.count)
                let end: Int64
                do {
                    end = try index.addFragment(bytes, at: box.offset, limit: size, defaults: defaults, trackPosition: trackPosition)
                } catch {
                    throw .problem(error)
                }
                // A fragment adds its media data to what is used when a sample of it is kept.
                if zip(before, index.tracks.map(\.count)).contains(where: { $0 != $1 }) {
                    lastUsedEnd = max(lastUsedEnd, box.end, end)
                }
            case "mdat":
                // A fragment's media data: whole when its box is complete.
                if let previous, previous.type == "moof", previous.end == box.offset, box != cutBox {
                    lastUsedEnd = max(lastUsedEnd, box.end)
                }
            default:
                break
            }
        }
        index.mediaEnd = lastUsedEnd
        return index
    }

    /// Reads one 'moof' (all of its bytes, starting at file offset `base`)
    /// into the track tables; answers the end of the last sample it kept.
    private mutating func addFragment(_ bytes: [UInt8], at base: Int64, limit: Int64, defaults: [UInt32: TrackDefaults],
                                      trackPosition: [UInt32: Int]) throws(Problem) -> Int64 {
        var lastEnd = base
        var previousTrafEnd: Int64? = nil
        for traf in children(of: bytes, from: 8, to: bytes.count) where traf.type == "traf" {
            var tfhd: Range<Int>?
            var tfdt: Range<Int>?
            var runs: [Range<Int>] = []
            for child in children(of: bytes, from: traf.body.lowerBound, to: traf.body.upperBound) {
                switch child.type {
                case "tfhd": tfhd = child.body
                case "tfdt": tfdt = child.body
                case "trun": runs.append(child.body)
                default: break
                }
            }
            guard let tfhd, tfhd.count >= 8 else { throw .damaged("a track fragment has no header") }
            let flags = BigEndian.uint32(bytes, at: tfhd.lowerBound) & 0x00ff_ffff
            let trackID = BigEndian.uint32(bytes, at: tfhd.lowerBound + 4)
            guard let position = trackPosition[trackID] else { throw .damaged("a fragment names track \(trackID), which the movie box does not have") }
            var trackDefaults = defaults[trackID] ?? TrackDefaults()
            var cursor = tfhd.lowerBound + 8
            func field32() throws(Problem) -> UInt32 {
                guard cursor + 4 <= tfhd.upperBound else { throw .damaged("a track fragment header is cut short") }
                defer { cursor += 4 }
                return BigEndian.uint32(bytes, at: cursor)
            }
            var baseOffset: Int64
            if flags & 0x1 != 0 {
                guard cursor + 8 <= tfhd.upperBound else { throw .damaged("a track fragment header is cut short") }
                baseOffset = Int64(bitPattern: BigEndian.uint64(bytes, at: cursor))
                cursor += 8
            } else if flags & 0x20000 != 0 || previousTrafEnd == nil {
                baseOffset = base
            } else {
                baseOffset = previousTrafEnd!
            }
            if flags & 0x2 != 0 { trackDefaults.descriptionIndex = try field32() }
            if flags & 0x8 != 0 { trackDefaults.duration = try field32() }
            if flags & 0x10 != 0 { trackDefaults.size = try field32() }
            if flags & 0x20 != 0 { trackDefaults.flags = try field32() }

            var track = tracks[position]
            var decodeTime = track.nextDecodeTime
            if let tfdt, tfdt.count >= 8 {
                if bytes[tfdt.lowerBound] == 1, tfdt.count >= 12 {
                    decodeTime = Int64(bitPattern: BigEndian.uint64(bytes, at: tfdt.lowerBound + 4))
                } else {
                    decodeTime = Int64(BigEndian.uint32(bytes, at: tfdt.lowerBound + 4))
                }
            }
            var dataCursor = baseOffset
            for run in runs {
                guard run.count >= 8 else { throw .damaged("a track run is cut short") }
                let version = bytes[run.lowerBound]
                let runFlags = BigEndian.uint32(bytes, at: run.lowerBound) & 0x00ff_ffff
                let sampleCount = Int(BigEndian.uint32(bytes, at: run.lowerBound + 4))
                var at = run.lowerBound + 8
                if runFlags & 0x1 != 0 {
                    guard at + 4 <= run.upperBound else { throw .damaged("a track run is cut short") }
                    dataCursor = baseOffset + Int64(Int32(bitPattern: BigEndian.uint32(bytes, at: at)))
                    at += 4
                }
                var firstFlags: UInt32?
                if runFlags & 0x4 != 0 {
                    guard at + 4 <= run.upperBound else { throw .damaged("a track run is cut short") }
                    firstFlags = BigEndian.uint32(bytes, at: at)
                    at += 4
                }
                let perSample = [0x100, 0x200, 0x400, 0x800].filter { runFlags & UInt32($0) != 0 }.count * 4
                guard sampleCount >= 0, at + perSample * sampleCount <= run.upperBound else { throw .damaged("a track run lists more samples than it holds") }
                var chunkStart: Int64?
                var chunkCount = 0
                for sample in 0..<sampleCount {
                    var duration = trackDefaults.duration
                    var size = trackDefaults.size
                    var sampleFlags = trackDefaults.flags
                    var offset: Int32 = 0
                    if runFlags & 0x100 != 0 { duration = BigEndian.uint32(bytes, at: at); at += 4 }
                    if runFlags & 0x200 != 0 { size = BigEndian.uint32(bytes, at: at); at += 4 }
                    if runFlags & 0x400 != 0 { sampleFlags = BigEndian.uint32(bytes, at: at); at += 4 }
                    if sample == 0, let firstFlags { sampleFlags = firstFlags }
                    if runFlags & 0x800 != 0 {
                        let raw = BigEndian.uint32(bytes, at: at)
                        offset = version == 0 ? Int32(clamping: raw) : Int32(bitPattern: raw)
                        at += 4
                    }
                    let end = dataCursor + Int64(size)
                    if track.isCut || dataCursor < base || end > limit {
                        track.isCut = true
                    } else {
                        if chunkStart == nil { chunkStart = dataCursor }
                        chunkCount += 1
                        track.sizes.append(size)
                        track.decodeTimes.append(decodeTime)
                        track.durations.append(duration)
                        track.compositionOffsets.append(offset)
                        if sampleFlags & 0x1_0000 == 0 { track.syncSamples.append(UInt32(track.sizes.count)) }
                        lastEnd = max(lastEnd, end)
                    }
                    decodeTime += Int64(duration)
                    dataCursor = end
                }
                if let chunkStart, chunkCount > 0 {
                    track.chunks.append(TrackSamples.Chunk(offset: chunkStart, sampleCount: chunkCount, descriptionIndex: trackDefaults.descriptionIndex))
                }
            }
            track.nextDecodeTime = decodeTime
            tracks[position] = track
            previousTrafEnd = dataCursor
        }
        return lastEnd
    }

    /// The child boxes in `bytes[from..<to]`: type and body range.
    private func children(of bytes: [UInt8], from: Int, to: Int) -> [(type: String, body: Range<Int>)] {
        var result = [(type: String, body: Range<Int>)]()
        var offset = from
        while offset + 8 <= to {
            var size = Int(BigEndian.uint32(bytes, at: offset))
            var header = 8
            if size == 1 {
                guard offset + 16 <= to else { break }
                size = Int(clamping: BigEndian.uint64(bytes, at: offset + 8))
                header = 16
            } else if size == 0 {
                size = to - offset
            }
            guard size >= header, offset + size <= to else { break }
            result.append((BigEndian.fourCC(bytes[...], at: offset + 4), (offset + header)..<(offset + size)))
            offset += size
        }
        return result
    }

    /// A failure reading the file: its bytes could not be read, or they are not a fragmented movie.
    enum ReadFailure: Error {
        case io(SystemCallError)
        case problem(Problem)
    }

    private static func io<T>(_ body: () throws(SystemCallError) -> T) throws(ReadFailure) -> T {
        do { return try body() } catch { throw .io(error) }
    }
}

extension FragmentIndex.Problem: CustomStringConvertible {
    var description: String {
        switch self {
        case .notAMovie(let why): return "not an MP4 or QuickTime file (\(why))"
        case .noMovieBox: return "it has no movie box ('moov'), so nothing says what its tracks are"
        case .unfragmentedWithoutIndex:
            return "it was written as one piece (not in fragments) and cut off before its index was written; nothing records where its samples are"
        case .damaged(let why): return "it is damaged: \(why)"
        }
    }
}
