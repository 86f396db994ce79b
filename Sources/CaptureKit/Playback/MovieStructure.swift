#if canImport(Glibc)
import Glibc
#endif

/// The layout of an MP4 or QuickTime file as its boxes state it: what
/// libavformat applies but does not report, such as edit lists, alternate
/// groups, which tracks are enabled, and how many fragments there are.
package struct MovieStructure: Sendable, Equatable {
    /// One entry of a track's edit list, in seconds as exact times.
    package struct Edit: Sendable, Equatable {
        /// How long the edit lasts on the movie's timeline.
        package var duration: MediaTime
        /// Where in the track's media it starts; nil for an empty edit.
        package var mediaTime: MediaTime?
    }

    package struct Track: Sendable, Equatable {
        package var trackID: UInt32
        package var isEnabled: Bool
        /// 0 when the track is in no alternate group.
        package var alternateGroup: UInt16
        package var mediaTimescale: UInt32
        /// The track's duration on the movie's timeline.
        package var duration: MediaTime
        package var edits: [Edit]
    }

    package var movieTimescale: UInt32
    package var movieDuration: MediaTime
    package var tracks: [Track]
    /// Complete movie fragments ('moof' boxes with their whole media data).
    package var fragmentCount: Int
    /// Whether the movie box announces fragments ('mvex'): the samples are
    /// indexed fragment by fragment, not in one index.
    package var isFragmented: Bool
    /// Whether the file was finished: a regular movie (one index with its
    /// samples) that is not cut short, or a fragmented one closed by its
    /// fragment index ('mfra'). A recording that was killed, or whose
    /// conversion to a regular movie did not complete, is not.
    package var isFinished: Bool
    /// Whether the index ('moov') comes before the media data ('mdat').
    package var indexBeforeMedia: Bool
    /// Whether the last box runs past the end of the file.
    package var isTruncated: Bool

    /// Reads the structure of the file at `path`; nil when it is not an
    /// ISO base media file or has no movie box.
    package static func read(path: String) throws(SystemCallError) -> MovieStructure? {
        let fd = try Posix.open(path, O_RDONLY | O_CLOEXEC)
        defer { try? Posix.close(fd, path: path) }
        let end = Int64(try Posix.fstat(fd, path: path).st_size)

        func read(_ offset: Int64, _ count: Int) throws(SystemCallError) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = try Posix.pread(fd, into: &bytes, at: offset, path: path)
            return Array(bytes.prefix(got))
        }

        var offset: Int64 = 0
        var movie: MovieBox?
        var moovOffset: Int64?
        var mdatOffset: Int64?
        var fragments = 0
        var pendingFragment = false
        var fragmentIndexBox = false
        var laterMovie = false
        var truncated = false
        var first = true
        while offset + 8 <= end {
            let header = try read(offset, 16)
            guard header.count >= 8 else { break }
            var size = Int64(BigEndian.uint32(header, at: 0))
            let type = BigEndian.fourCC(header[...], at: 4)
            if first {
                // An ISO file opens with one of these boxes.
                guard ["ftyp", "moov", "mdat", "free", "skip", "wide", "styp", "pnot"].contains(type) else { return nil }
                first = false
            }
            if size == 1, header.count >= 16 {
                size = Int64(bitPattern: BigEndian.uint64(header, at: 8))
            } else if size == 0 {
                size = end - offset
            }
            guard size >= 8 else { truncated = true; break }
            if offset + size > end { truncated = true; break }
            switch type {
            case "moov":
                // The first movie box is the file's; one after the
                // fragments is what a conversion that stopped left.
                if moovOffset != nil {
                    laterMovie = true
                    break
                }
                moovOffset = offset
                guard size < 256 << 20 else { return nil }
                let bytes = try read(offset, Int(size))
                movie = try? MovieBox.parseList(bytes[...]).first
            case "mfra":
                fragmentIndexBox = true
            case "mdat":
                if mdatOffset == nil { mdatOffset = offset }
                if pendingFragment { fragments += 1; pendingFragment = false }
            case "moof":
                pendingFragment = true
            default: break
            }
            offset += size
        }
        if offset < end && !truncated { truncated = true }
        guard let movie, let moovOffset else { return nil }
        let fragmented = movie.child("mvex") != nil
        let finished = !truncated && (fragmented ? fragmentIndexBox && !laterMovie : true)
        return structure(of: movie, fragments: fragments, indexBeforeMedia: mdatOffset.map { moovOffset < $0 } ?? true,
                         truncated: truncated, finished: finished)
    }

    static func structure(of movie: MovieBox, fragments: Int, indexBeforeMedia: Bool, truncated: Bool,
                          finished: Bool = true) -> MovieStructure? {
        guard let mvhd = movie.child("mvhd") else { return nil }
        let (movieScale, movieDuration) = MovieHeader.timing(mvhd.payload, trackHeader: false)
        let scale = Int32(clamping: max(movieScale, 1))
        var tracks = [Track]()
        for trak in movie.children ?? [] where trak.type == "trak" {
            guard let tkhd = trak.child("tkhd") else { continue }
            let mediaScale = MovieHeader.mediaTimescale(trak) ?? 1
            let edits = trak.find("edts", "elst").map { EditList.entries($0.payload) } ?? []
            tracks.append(Track(
                trackID: MovieHeader.trackID(tkhd.payload),
                isEnabled: MovieHeader.isEnabled(tkhd.payload),
                alternateGroup: MovieHeader.alternateGroup(tkhd.payload),
                mediaTimescale: mediaScale,
                duration: MediaTime(value: Int64(clamping: MovieHeader.timing(tkhd.payload, trackHeader: true).duration), timescale: scale),
                edits: edits.map { entry in
                    Edit(duration: MediaTime(value: Int64(clamping: entry.duration), timescale: scale),
                         mediaTime: entry.mediaTime.map { MediaTime(value: $0, timescale: Int32(clamping: max(mediaScale, 1))) })
                }))
        }
        return MovieStructure(movieTimescale: movieScale, movieDuration: MediaTime(value: Int64(clamping: movieDuration), timescale: scale),
                              tracks: tracks, fragmentCount: fragments, isFragmented: movie.child("mvex") != nil, isFinished: finished,
                              indexBeforeMedia: indexBeforeMedia, isTruncated: truncated)
    }
}
