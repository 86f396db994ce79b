/// A chapter of a media file: a title over a stretch of its timeline, as
/// a recording's markers become chapters and `MediaInfo` reads them back.
public struct MediaChapter: Sendable, Hashable {
    /// Where it starts and ends on the file's timeline.
    public var start: MediaTime
    public var end: MediaTime
    public var title: String

    public init(start: MediaTime, end: MediaTime, title: String) {
        self.start = start
        self.end = end
        self.title = title
    }
}

/// How points marked on a file's timeline become its chapters, and the
/// boxes and entries that carry them.
enum Chapters {
    /// The longest title, in UTF-8 bytes: a Nero chapter ('chpl') stores
    /// its title's length in one byte.
    static let maxTitleBytes = 255
    /// The most chapters a 'chpl' box holds (its count is one byte);
    /// Matroska has no such limit.
    static let maxMovieChapters = 255

    /// The chapters of a file `duration` long from points marked on its
    /// timeline, in time order (points at one time keep the order they were
    /// marked in): each runs from its point to the next one's, the last to
    /// the end. A point past the end (a marker taken as the last samples
    /// were being cut off) is moved to the end. No chapter is made up at 0:
    /// the file plays from its start to the first marker outside any.
    static func chapters(from points: [(time: MediaTime, title: String)], duration: MediaTime) -> [MediaChapter] {
        let end = duration.isNumeric && duration > .zero ? duration : .zero
        let sorted = points.enumerated()
            .filter { $0.element.time.isNumeric }
            .sorted { $0.element.time == $1.element.time ? $0.offset < $1.offset : $0.element.time < $1.element.time }
            .map { (time: min(max($0.element.time, .zero), end), title: $0.element.title) }
        return sorted.indices.map { index in
            MediaChapter(start: sorted[index].time, end: index + 1 < sorted.count ? sorted[index + 1].time : end,
                         title: sorted[index].title)
        }
    }

    // MARK: MP4 and QuickTime: the Nero 'chpl' box in the movie's 'udta'

    /// The 'chpl' box: version 1, flags 0, four reserved bytes, a one-byte
    /// count, then per chapter its start in units of 100 ns and its title
    /// (a length byte and UTF-8). This is the layout libavformat writes and
    /// reads, and mp4v2's reading of it (a reserved byte and a 32-bit count)
    /// gives the same bytes for up to 255 chapters.
    static func neroChapterBox(_ chapters: [MediaChapter]) -> MovieBox {
        let kept = chapters.prefix(maxMovieChapters)
        var payload: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0, UInt8(kept.count)]
        for chapter in kept {
            let ticks = chapter.start.converted(toTimescale: 10_000_000)
            BigEndian.append(UInt64(max(0, ticks.isNumeric ? ticks.value : 0)), to: &payload)
            let title = Array(chapter.title.utf8.prefix(maxTitleBytes))
            payload.append(UInt8(title.count))
            payload += title
        }
        return MovieBox(type: "chpl", payload: payload)
    }

    /// Puts `chapters` into the movie box's own 'udta' (made when there is
    /// none), replacing a 'chpl' already there; with no chapters, the movie
    /// is left as it is.
    static func addNeroChapters(_ chapters: [MediaChapter], to movie: inout MovieBox) {
        guard !chapters.isEmpty, var children = movie.children else { return }
        let box = neroChapterBox(chapters)
        // 'udta' is kept as bytes (see MovieBox): its children are parsed
        // here, and a payload that does not parse as boxes gets the box
        // appended as it is.
        if let index = children.firstIndex(where: { $0.type == "udta" }) {
            let payload = children[index].payload
            if var entries = try? MovieBox.parseList(payload[...]) {
                entries.removeAll { $0.type == "chpl" }
                entries.append(box)
                children[index].payload = entries.flatMap { $0.serialized() }
            } else {
                children[index].payload = payload + box.serialized()
            }
        } else {
            children.append(MovieBox(type: "udta", payload: box.serialized()))
        }
        movie.children = children
    }
}
