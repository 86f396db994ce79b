/// The sample-writing sessions of a writer, and how they map source time
/// (the clock samples are stamped with) onto the file's timeline.
///
/// Sessions are laid end to end: the first starts at file time 0, and a
/// session running from source time S to E fills file time M … M + (E − S),
/// where M is the sum of the durations of the sessions before it. Samples
/// outside every session do not play.
struct SessionTimeline {
    struct Session: Equatable {
        var start: MediaTime
        /// nil while the session is open.
        var end: MediaTime?
        /// Where the session starts on the file's timeline.
        var fileStart: MediaTime
    }

    private(set) var sessions: [Session] = []

    var isOpen: Bool { sessions.last.map { $0.end == nil } ?? false }
    var hasStarted: Bool { !sessions.isEmpty }

    /// The source time of the first session's start: media timestamps are
    /// counted from it.
    var origin: MediaTime? { sessions.first?.start }

    mutating func start(at time: MediaTime) throws(WriterError) {
        guard time.isNumeric else { throw .invalidState("a session must start at a numeric time, not \(time)") }
        if isOpen { throw .invalidState("a session is already running; end it before starting another") }
        var fileStart = MediaTime.zero
        if let last = sessions.last, let end = last.end {
            guard time >= end else {
                throw .invalidState("a session cannot start at \(time.seconds) s, before the previous one ended (\(end.seconds) s)")
            }
            fileStart = last.fileStart + (end - last.start)
            guard fileStart.isNumeric else { throw .invalidState("session times overflow") }
        }
        sessions.append(Session(start: time, end: nil, fileStart: fileStart))
    }

    mutating func end(at time: MediaTime) throws(WriterError) {
        guard isOpen, let last = sessions.last else { throw .invalidState("no session is running") }
        guard time.isNumeric, time >= last.start else {
            throw .invalidState("a session cannot end at \(time.seconds) s, before it started (\(last.start.seconds) s)")
        }
        sessions[sessions.count - 1].end = time
    }

    /// Where a sample at source time `time` goes on the file's timeline, or
    /// nil when it falls outside every session.
    func fileTime(forSource time: MediaTime) -> MediaTime? {
        for session in sessions.reversed() where time >= session.start {
            if let end = session.end, time >= end { return nil }
            return session.fileStart + (time - session.start)
        }
        return nil
    }

    /// The part of a span of source time [start, start + duration) that lies
    /// in one session, as (offset into the span, length), for trimming audio
    /// buffers; nil when none of it does.
    func overlap(start: MediaTime, duration: MediaTime) -> (skip: MediaTime, keep: MediaTime)? {
        let spanEnd = start + duration
        for session in sessions.reversed() {
            let sessionEnd = session.end ?? .positiveInfinity
            let from = max(start, session.start)
            let to = min(spanEnd, sessionEnd)
            if from < to { return (from - start, to - from) }
        }
        return nil
    }

    /// The sessions with the open one closed at `end`.
    func closed(at end: MediaTime) -> [Session] { SessionTimeline.closing(sessions, at: end) }

    /// `sessions` with the last, when open, closed at `end`.
    static func closing(_ sessions: [Session], at end: MediaTime) -> [Session] {
        var result = sessions
        if let last = result.last, last.end == nil {
            result[result.count - 1].end = max(end, last.start)
        }
        return result
    }

    /// The edit lists that lay tracks into sessions (the last, when open,
    /// closed where the tracks end), rounded to the file's time scales, and
    /// the movie's duration in `movieTimescale` units. `tracks` are in
    /// source time counted from `origin`; a nil track gets no edits.
    static func editLists(sessions: [Session], origin: MediaTime, tracks: [TrackSpan?], mediaTimescales: [Int32],
                          movieTimescale: Int32) -> (edits: [[EditEntry]], duration: UInt64) {
        var latestEnd = MediaTime.zero
        for track in tracks { if let last = track?.runs.last { latestEnd = max(latestEnd, last.end) } }
        let closedSessions = closing(sessions, at: origin + latestEnd)
        let duration = totalDuration(closedSessions).converted(toTimescale: movieTimescale)
        let edits = tracks.enumerated().map { index, track -> [EditEntry] in
            guard let track, index < mediaTimescales.count else { return [] }
            return rounded(SessionTimeline.edits(sessions: closedSessions, origin: origin, track: track),
                           movieTimescale: movieTimescale, mediaTimescale: mediaTimescales[index])
        }
        return (edits, UInt64(max(0, duration.isNumeric ? duration.value : 0)))
    }

    /// The file duration once every session is closed.
    static func totalDuration(_ sessions: [Session]) -> MediaTime {
        guard let last = sessions.last, let end = last.end else { return .zero }
        return last.fileStart + (end - last.start)
    }

    /// Which session holds source time `time`, if any.
    func sessionIndex(forSource time: MediaTime) -> Int? {
        for (index, session) in sessions.enumerated().reversed() where time >= session.start {
            if let end = session.end, time >= end { return nil }
            return index
        }
        return nil
    }

    /// What one track holds, in source time counted from `origin`.
    struct TrackSpan {
        /// The stretches of time its samples cover, in order, not touching.
        var runs: [(start: MediaTime, end: MediaTime)]
        /// The decode time of its first sample: media time 0.
        var firstDecode: MediaTime
        /// Whether a session's samples cover it from the first to the last
        /// without holes: video, whose frames show until the next one
        /// however many a camera dropped in between.
        var bridgesGaps = false

        init(runs: [(start: MediaTime, end: MediaTime)], firstDecode: MediaTime, bridgesGaps: Bool = false) {
            self.runs = runs
            self.firstDecode = firstDecode
            self.bridgesGaps = bridgesGaps
        }
    }

    /// How far apart (seconds) the end of one edit's media and the start of
    /// the next's may be and still be one stretch of media: well under a
    /// sample at 8 kHz, far over the rounding of nanosecond stamps.
    static let continuityTolerance = 0.0001

    /// One edit in MediaTime, before rounding to the file's time scales.
    struct Edit: Equatable {
        var duration: MediaTime
        /// Media time where the edit starts, or nil for an empty edit.
        var mediaStart: MediaTime?
    }

    /// The edit list that lays a track's samples into closed sessions (in
    /// source time counted from the origin): per session an empty edit where
    /// the track has nothing yet (or, after media, the media before held
    /// longer), then the media it covers; video whose media ends before its
    /// session does, with more after it, holds its last frame to the session's
    /// end; a session without media for the track is an empty edit; empty
    /// edits at the end are left out.
    static func edits(sessions: [Session], origin: MediaTime, track: TrackSpan) -> [Edit] {
        var edits = [Edit]()
        func add(_ edit: Edit) {
            guard edit.duration > .zero else { return }
            if edit.mediaStart == nil, let last = edits.last, last.mediaStart == nil {
                edits[edits.count - 1].duration = last.duration + edit.duration
            } else if let start = edit.mediaStart, let last = edits.last, let lastStart = last.mediaStart,
                      abs((start - (lastStart + last.duration)).seconds) < continuityTolerance {
                // Media that goes on where the edit before ends (the next
                // session, its samples stamped to follow) is one edit: the
                // form every reader plays. (Capture stamps in nanoseconds
                // and sample times a track's first sample puts off the
                // nanosecond grid differ by less than a sample.)
                edits[edits.count - 1].duration = last.duration + edit.duration
            } else {
                edits.append(edit)
            }
        }
        for session in sessions {
            guard let sessionEnd = session.end else { continue }
            let start = session.start - origin
            let end = sessionEnd - origin
            var cursor = start
            var runs = track.runs.filter { $0.end > start && $0.start < end }
            if track.bridgesGaps, let first = runs.first, let last = runs.last { runs = [(first.start, last.end)] }
            for run in runs {
                let from = max(start, run.start)
                let to = min(end, run.end)
                if from > cursor, let last = edits.last, last.mediaStart != nil {
                    // Media that starts late after media before it (a resume's
                    // first frame after the resume point) holds the picture
                    // before it: an empty edit in the middle of the list is
                    // played wrongly by libavformat, which shows the next
                    // frame at its start as well, one frame more than the
                    // track holds. (The held sample lasts until the next one,
                    // so the media is there.)
                    edits[edits.count - 1].duration = last.duration + (from - cursor)
                } else {
                    add(Edit(duration: from - cursor, mediaStart: nil))
                }
                add(Edit(duration: to - from, mediaStart: from - track.firstDecode))
                cursor = to
            }
            if track.bridgesGaps, cursor < end, !runs.isEmpty, let last = edits.last, last.mediaStart != nil,
               track.runs.contains(where: { $0.start >= end }) {
                // Frames lost before a pause (a busy machine) end the media early in
                // its session: the last frame shows until the session ends, as it
                // does until the next frame inside one. Its sample lasts until the
                // frame after the resume, so the media is there. An empty edit here
                // would sit in the middle of the list, which GStreamer and mkvmerge
                // leave out of the track's duration and libavformat plays wrongly.
                edits[edits.count - 1].duration = last.duration + (end - cursor)
                cursor = end
            }
            add(Edit(duration: end - cursor, mediaStart: nil))
        }
        while let last = edits.last, last.mediaStart == nil { edits.removeLast() }
        return edits
    }

    /// Rounds edits to whole units: durations on the movie time scale (by
    /// rounding each edit's end on the running total, so rounding errors do
    /// not add up), media times on the media time scale.
    static func rounded(_ edits: [Edit], movieTimescale: Int32, mediaTimescale: Int32) -> [EditEntry] {
        var entries = [EditEntry]()
        var elapsed = MediaTime.zero
        var elapsedUnits: Int64 = 0
        for edit in edits {
            elapsed = elapsed + edit.duration
            let endUnits = elapsed.converted(toTimescale: movieTimescale).value
            let duration = UInt64(max(0, endUnits - elapsedUnits))
            elapsedUnits = endUnits
            let media = edit.mediaStart.map { max(0, $0.converted(toTimescale: mediaTimescale).value) }
            // A gap shorter than a unit of the movie's time scale is no gap.
            if media == nil && duration == 0 { continue }
            entries.append(EditEntry(duration: duration, mediaTime: media))
        }
        return entries
    }
}
