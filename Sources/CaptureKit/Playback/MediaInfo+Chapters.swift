import CFFmpeg

extension MediaInfo {
    /// The chapters libavformat reads from an open file (MP4/QuickTime
    /// 'chpl' or chapter track, Matroska/WebM chapters, Ogg comments …),
    /// in time order. One without an end ends where the next starts, the
    /// last where the file ends (`duration`).
    static func chapters(of context: UnsafeMutablePointer<AVFormatContext>, duration: MediaTime) -> [MediaChapter] {
        guard let list = context.pointee.chapters else { return [] }
        var chapters = [(start: MediaTime, end: MediaTime?, title: String)]()
        for index in 0..<Int(context.pointee.nb_chapters) {
            guard let chapter = list[index] else { continue }
            let base = chapter.pointee.time_base
            guard base.num > 0, base.den > 0, chapter.pointee.start != cffmpeg_AV_NOPTS_VALUE else { continue }
            func time(_ ticks: Int64) -> MediaTime { MediaTime(value: ticks, timescale: base.den) * Int64(base.num) }
            let end = chapter.pointee.end
            let title = av_dict_get(chapter.pointee.metadata, "title", nil, 0).map { String(cString: $0.pointee.value) } ?? ""
            chapters.append((time(chapter.pointee.start), end == cffmpeg_AV_NOPTS_VALUE ? nil : time(end), title))
        }
        let sorted = chapters.enumerated()
            .sorted { $0.element.start == $1.element.start ? $0.offset < $1.offset : $0.element.start < $1.element.start }
            .map(\.element)
        return sorted.indices.map { index in
            let next = index + 1 < sorted.count ? sorted[index + 1].start : (duration.isNumeric ? duration : sorted[index].start)
            return MediaChapter(start: sorted[index].start, end: sorted[index].end ?? max(next, sorted[index].start), title: sorted[index].title)
        }
    }
}
