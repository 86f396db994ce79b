/// Turns a fragmented MP4/QuickTime file into a regular one in place,
/// without moving its media: what a clean finish does to a recording written
/// in fragments (the "hybrid" layout OBS writes, and FFmpeg 7.1's
/// `hybrid_fragmented`), and what `MovieRepair` does to one that was killed.
///
/// The fragments stay where they are. A new movie box with the complete
/// sample tables (their chunk offsets pointing at the samples where the
/// fragments put them) is written after the last fragment; then the head is
/// rewritten: the first movie box (and what follows it up to the first
/// fragment) becomes a 'free' box followed by one 'mdat' header that spans
/// every fragment, so that their 'moof' boxes are unused bytes inside the
/// media data and no reader walks them. The file ends as
/// `ftyp, free, mdat, moov`. Finishing writes the index and a few bytes at
/// the head, whatever the length of the media.
///
/// Crash safety: the new movie box is written and flushed to disk before
/// the head changes. Until the head is rewritten (one small write), readers
/// see the fragmented file they saw before (a movie box after the fragments
/// is a duplicate they skip); after it, the regular file.
struct MovieDefragmenter {
    let file: OutputFile

    /// What a conversion did.
    struct Outcome: Equatable {
        /// The size of the new movie box.
        var movieBytes: Int
        /// Where the single media data box starts, and whether its header
        /// has the 64-bit size (media past 4 GiB).
        var mediaDataOffset: Int64
        var largeMediaData: Bool
        /// Bytes after the last usable sample that were dropped (a cut
        /// fragment's rest, a fragment index, an unfinished movie box).
        var droppedBytes: Int64
        var fileSize: Int64
    }

    // MARK: The regular movie box

    /// The movie box of the regular file: the fragmented file's own, its
    /// 'mvex' removed, each track's sample tables built from its fragments
    /// and its media duration set; then the movie time scale, edit lists,
    /// durations and track flags from `patches` (see `MoviePatcher.patch`).
    static func regularMovie(from index: FragmentIndex, timescale: UInt32?, totalDuration: UInt64?,
                             patches: [UInt32: TrackPatch]) throws(WriterError) -> MovieBox {
        var movie = index.movie
        guard var children = movie.children else { throw .malformedOutput("the movie box is empty") }
        children.removeAll { $0.type == "mvex" }
        var samplesByID = [UInt32: FragmentIndex.TrackSamples]()
        for track in index.tracks { samplesByID[track.trackID] = track }
        for position in children.indices where children[position].type == "trak" {
            guard let tkhd = children[position].child("tkhd") else { continue }
            let samples = samplesByID[MovieHeader.trackID(tkhd.payload)] ?? FragmentIndex.TrackSamples(trackID: MovieHeader.trackID(tkhd.payload))
            try rebuildTables(&children[position], samples: samples)
        }
        movie.children = children
        try MoviePatcher.patch(&movie, timescale: timescale, totalDuration: totalDuration, tracks: patches)
        return movie
    }

    /// Replaces a track's empty sample tables with the full ones and sets
    /// its media duration.
    private static func rebuildTables(_ trak: inout MovieBox, samples: FragmentIndex.TrackSamples) throws(WriterError) {
        guard var mdia = trak.child("mdia"), var mdiaChildren = mdia.children,
              let minfIndex = mdiaChildren.firstIndex(where: { $0.type == "minf" }),
              var minfChildren = mdiaChildren[minfIndex].children,
              let stblIndex = minfChildren.firstIndex(where: { $0.type == "stbl" }),
              let stblChildren = minfChildren[stblIndex].children,
              let stsd = stblChildren.first(where: { $0.type == "stsd" }) else {
            throw .malformedOutput("a track has no sample description")
        }
        let rebuilt: Set<String> = ["stts", "ctts", "stss", "stsc", "stsz", "stz2", "stco", "co64", "sgpd", "sbgp", "sdtp", "stps", "cslg"]
        var tables = [stsd]
        tables += SampleTables.boxes(for: samples, rollsBackOne: SampleTables.isAAC(stsd))
        tables += stblChildren.filter { $0.type != "stsd" && !rebuilt.contains($0.type) }
        minfChildren[stblIndex].children = tables
        mdiaChildren[minfIndex].children = minfChildren
        if let mdhdIndex = mdiaChildren.firstIndex(where: { $0.type == "mdhd" }) {
            mdiaChildren[mdhdIndex].payload = MovieHeader.setting(mdiaChildren[mdhdIndex].payload, trackHeader: false,
                                                                 timescale: nil, duration: samples.mediaDuration)
        }
        mdia.children = mdiaChildren
        guard var children = trak.children, let mdiaIndex = children.firstIndex(where: { $0.type == "mdia" }) else { return }
        children[mdiaIndex] = mdia
        trak.children = children
    }

    // MARK: Rewriting the file

    /// Writes `movie` after the media the tables use (cutting off whatever
    /// followed it), flushes it to disk, then turns the head into 'free' +
    /// 'mdat' and flushes again.
    func convert(_ index: FragmentIndex, movie: MovieBox) throws(WriterError) -> Outcome {
        guard let firstFragment = index.firstFragmentOffset else { throw .malformedOutput("the file has no fragment") }
        let mediaEnd = index.mediaEnd
        // The media data box starts right before the first fragment: a
        // 32-bit size where it fits, else the 64-bit form.
        let large = mediaEnd - (firstFragment - 8) > Int64(UInt32.max)
        let headerSize: Int64 = large ? 16 : 8
        let mediaDataOffset = firstFragment - headerSize
        let headStart = index.movieBox.offset
        guard mediaDataOffset - headStart >= 8 else { throw .malformedOutput("no room before the first fragment for the media data header") }

        let bytes = movie.serialized()
        try io { () throws(SystemCallError) in
            try file.write(bytes, at: mediaEnd)
            try file.truncate(to: mediaEnd + Int64(bytes.count))
            try file.sync()
        }
        // The head: a 'free' box from the movie box to the media data
        // header (its old contents zeroed), then that header. One write
        // where the stretch is small, as it is when the fragments follow
        // the movie box and the session log.
        let freeSize = mediaDataOffset - headStart
        let freeHeader = freeSize > Int64(UInt32.max) ? 16 : 8
        guard freeSize >= Int64(freeHeader) else { throw .malformedOutput("no room before the first fragment for the media data header") }
        var free = [UInt8]()
        if freeHeader == 16 {
            BigEndian.append(UInt32(1), to: &free)
            free += Array("free".utf8)
            BigEndian.append(UInt64(freeSize), to: &free)
        } else {
            BigEndian.append(UInt32(freeSize), to: &free)
            free += Array("free".utf8)
        }
        var mediaHeader = [UInt8]()
        let mediaSize = mediaEnd - mediaDataOffset
        if large {
            BigEndian.append(UInt32(1), to: &mediaHeader)
            mediaHeader += Array("mdat".utf8)
            BigEndian.append(UInt64(mediaSize), to: &mediaHeader)
        } else {
            BigEndian.append(UInt32(mediaSize), to: &mediaHeader)
            mediaHeader += Array("mdat".utf8)
        }
        // What the head held that readers could mistake for an index: the
        // movie box, and the session and chapter logs after it.
        let oldEnd = min(mediaDataOffset, max(index.movieBox.end, index.sessionLogBox?.end ?? 0, index.chapterLogBox?.end ?? 0))
        try io { () throws(SystemCallError) in
            if firstFragment - headStart <= 1 << 20 {
                var head = [UInt8](repeating: 0, count: Int(firstFragment - headStart))
                head.replaceSubrange(0..<free.count, with: free)
                head.replaceSubrange(Int(freeSize)..<head.count, with: mediaHeader)
                try file.write(head, at: headStart)
            } else {
                var head = [UInt8](repeating: 0, count: Int(max(Int64(free.count), oldEnd - headStart)))
                head.replaceSubrange(0..<free.count, with: free)
                try file.write(head, at: headStart)
                try file.write(mediaHeader, at: mediaDataOffset)
            }
            try file.sync()
        }
        return Outcome(movieBytes: bytes.count, mediaDataOffset: mediaDataOffset, largeMediaData: large,
                       droppedBytes: index.fileSize - mediaEnd, fileSize: mediaEnd + Int64(bytes.count))
    }

    /// For a file that has no fragment (nothing was recorded): the regular
    /// movie box, with its empty tables, in place of the first one, the
    /// bytes it no longer needs a 'free' box. (A regular box is smaller: it
    /// has no 'mvex'.)
    func replaceInPlace(_ index: FragmentIndex, movie: MovieBox) throws(WriterError) {
        var bytes = movie.serialized()
        let room = Int(index.movieBox.size)
        guard bytes.count == room || bytes.count + 8 <= room else { throw .malformedOutput("the regular movie box does not fit in place of the fragmented one") }
        if bytes.count < room {
            BigEndian.append(UInt32(room - bytes.count), to: &bytes)
            bytes += Array("free".utf8)
            bytes += [UInt8](repeating: 0, count: room - bytes.count)
        }
        try io { () throws(SystemCallError) in
            try file.write(bytes, at: index.movieBox.offset)
            try file.sync()
        }
    }

    private func io<T>(_ body: () throws(SystemCallError) -> T) throws(WriterError) -> T {
        do { return try body() } catch { throw .io(path: file.path, error: error) }
    }
}

/// The sample table boxes of a regular movie ('stbl' children) for samples
/// read from fragments, in the order libavformat writes them.
enum SampleTables {
    static func boxes(for samples: FragmentIndex.TrackSamples, rollsBackOne: Bool) -> [MovieBox] {
        var boxes = [MovieBox]()
        boxes.append(MovieBox(type: "stts", payload: timeToSample(samples.timelineDurations())))
        if samples.syncSamples.count < samples.count {
            var payload: [UInt8] = [0, 0, 0, 0]
            BigEndian.append(UInt32(samples.syncSamples.count), to: &payload)
            for number in samples.syncSamples { BigEndian.append(number, to: &payload) }
            boxes.append(MovieBox(type: "stss", payload: payload))
        }
        if samples.hasCompositionOffsets {
            boxes.append(MovieBox(type: "ctts", payload: compositionOffsets(samples.compositionOffsets)))
        }
        boxes.append(MovieBox(type: "stsc", payload: sampleToChunk(samples.chunks)))
        boxes.append(MovieBox(type: "stsz", payload: sampleSizes(samples.sizes)))
        let offsets = samples.chunks.map { UInt64($0.offset) }
        if offsets.contains(where: { $0 > UInt64(UInt32.max) }) {
            boxes.append(MovieBox(type: "co64", payload: ChunkOffsets.payload64(offsets)))
        } else {
            boxes.append(MovieBox(type: "stco", payload: ChunkOffsets.payload32(offsets)))
        }
        if rollsBackOne && samples.count > 0 {
            // AAC: each sample needs the one before it decoded (a roll
            // distance of -1), as libavformat states it for AAC tracks.
            var description: [UInt8] = [1, 0, 0, 0]
            description += Array("roll".utf8)
            BigEndian.append(UInt32(2), to: &description)
            BigEndian.append(UInt32(1), to: &description)
            BigEndian.append(UInt16(bitPattern: -1), to: &description)
            boxes.append(MovieBox(type: "sgpd", payload: description))
            var mapping: [UInt8] = [0, 0, 0, 0]
            mapping += Array("roll".utf8)
            BigEndian.append(UInt32(1), to: &mapping)
            BigEndian.append(UInt32(samples.count), to: &mapping)
            BigEndian.append(UInt32(1), to: &mapping)
            boxes.append(MovieBox(type: "sbgp", payload: mapping))
        }
        return boxes
    }

    /// 'stts': runs of equal durations.
    static func timeToSample(_ durations: [UInt32]) -> [UInt8] {
        var runs = [(count: UInt32, duration: UInt32)]()
        for duration in durations {
            if let last = runs.last, last.duration == duration {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((1, duration))
            }
        }
        var payload: [UInt8] = [0, 0, 0, 0]
        payload.reserveCapacity(8 + runs.count * 8)
        BigEndian.append(UInt32(runs.count), to: &payload)
        for run in runs {
            BigEndian.append(run.count, to: &payload)
            BigEndian.append(run.duration, to: &payload)
        }
        return payload
    }

    /// 'ctts': runs of equal composition offsets; version 1 (signed) when one is negative.
    static func compositionOffsets(_ offsets: [Int32]) -> [UInt8] {
        var runs = [(count: UInt32, offset: Int32)]()
        for offset in offsets {
            if let last = runs.last, last.offset == offset {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((1, offset))
            }
        }
        var payload: [UInt8] = [offsets.contains { $0 < 0 } ? 1 : 0, 0, 0, 0]
        BigEndian.append(UInt32(runs.count), to: &payload)
        for run in runs {
            BigEndian.append(run.count, to: &payload)
            BigEndian.append(UInt32(bitPattern: run.offset), to: &payload)
        }
        return payload
    }

    /// 'stsc': runs of chunks with the same sample count and description.
    static func sampleToChunk(_ chunks: [FragmentIndex.TrackSamples.Chunk]) -> [UInt8] {
        var entries = [(first: UInt32, count: UInt32, description: UInt32)]()
        for (number, chunk) in chunks.enumerated() {
            if let last = entries.last, last.count == UInt32(chunk.sampleCount), last.description == chunk.descriptionIndex { continue }
            entries.append((UInt32(number + 1), UInt32(chunk.sampleCount), chunk.descriptionIndex))
        }
        var payload: [UInt8] = [0, 0, 0, 0]
        BigEndian.append(UInt32(entries.count), to: &payload)
        for entry in entries {
            BigEndian.append(entry.first, to: &payload)
            BigEndian.append(entry.count, to: &payload)
            BigEndian.append(entry.description, to: &payload)
        }
        return payload
    }

    /// 'stsz': one size for all, or a table.
    static func sampleSizes(_ sizes: [UInt32]) -> [UInt8] {
        var payload: [UInt8] = [0, 0, 0, 0]
        if let first = sizes.first, sizes.allSatisfy({ $0 == first }) {
            BigEndian.append(first, to: &payload)
            BigEndian.append(UInt32(sizes.count), to: &payload)
            return payload
        }
        payload.reserveCapacity(12 + 4 * sizes.count)
        BigEndian.append(UInt32(0), to: &payload)
        BigEndian.append(UInt32(sizes.count), to: &payload)
        for size in sizes { BigEndian.append(size, to: &payload) }
        return payload
    }

    /// Whether a sample description ('stsd') is MPEG-4 AAC: an 'mp4a'
    /// entry whose decoder configuration names object type 0x40 (or the
    /// MPEG-2 AAC profiles 0x66–0x68).
    static func isAAC(_ stsd: MovieBox) -> Bool {
        let bytes = stsd.payload
        guard let esds = find(Array("esds".utf8), in: bytes) else { return false }
        // esds: size and type before `esds`, then version and flags.
        var at = esds + 4 + 4
        func descriptor(_ tag: UInt8) -> Bool {
            guard at < bytes.count, bytes[at] == tag else { return false }
            at += 1
            for _ in 0..<4 {
                guard at < bytes.count else { return false }
                let byte = bytes[at]
                at += 1
                if byte & 0x80 == 0 { break }
            }
            return true
        }
        guard descriptor(0x03), at + 3 <= bytes.count else { return false }
        let flags = bytes[at + 2]
        at += 3
        if flags & 0x80 != 0 { at += 2 }
        if flags & 0x40 != 0, at < bytes.count { at += 1 + Int(bytes[at]) }
        if flags & 0x20 != 0 { at += 2 }
        guard descriptor(0x04), at < bytes.count else { return false }
        return [0x40, 0x66, 0x67, 0x68].contains(bytes[at])
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if Array(bytes[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}
