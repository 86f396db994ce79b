import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// What a fragmented movie keeps in its file while it is written, so that
/// one killed half-way can be repaired: its sessions (the session log) and
/// a header patched to say it is being written.
extension AssetWriter {
    /// Settles the time scale and track flags in a fragmented file's movie
    /// box, in place, once it is written at the head of the file.
    func patchFragmentedMovieHeader() throws(WriterError) {
        guard let io else { return }
        avio_flush(io.context)
        if let error = io.ioError { throw .io(path: outputPath, error: error) }
        let patcher = MoviePatcher(file: file)
        let boxes = try patcher.topLevelBoxes()
        let (_, movie) = try patcher.readMovie(boxes)
        let scale = try chooseMovieTimescale(movie)
        try patcher.patchInPlace(timescale: scale, tracks: trackPatches(movie: movie, edits: nil))
    }

    /// Puts the session log's box after the movie box, before the first
    /// fragment: through the muxer's I/O, which then goes on after it.
    func writeSessionLog() throws(WriterError) {
        guard let io else { return }
        var log = SessionLog(trackCount: inputList.count)
        for (index, span) in spans.enumerated() { log.firstDecodeTimes[index] = span.firstDecode }
        log.sessions = fileSessions().map { SessionLog.Session(start: $0.start, end: $0.end) }
        let offset = avio_tell(io.context)
        let bytes = log.box()
        bytes.withUnsafeBufferPointer { avio_write(io.context, $0.baseAddress, Int32($0.count)) }
        avio_flush(io.context)
        if let error = io.ioError { throw .io(path: outputPath, error: error) }
        headerBytes = avio_tell(io.context)
        sessionLog = log
        sessionLogOffset = offset
    }

    /// Rewrites the session log in place when what it says changed. Lock held.
    func updateSessionLog(_ change: (inout SessionLog) -> Void) throws(WriterError) {
        guard var log = sessionLog, let offset = sessionLogOffset else { return }
        let before = log
        change(&log)
        guard log != before else { return }
        sessionLog = log
        do throws(SystemCallError) {
            try file.write(log.payload(), at: offset + 8)
        } catch {
            throw failLocked(.io(path: outputPath, error: error))
        }
    }

    /// The sessions on the file's timeline, as samples are stamped: laid
    /// end to end from file time 0, moved by the timeline offset (see
    /// `placement`), so each one's media follows the one before without a
    /// gap. Lock held.
    func fileSessions() -> [SessionTimeline.Session] {
        timeline.sessions.map { session in
            SessionTimeline.Session(start: shiftedByOffset(session.fileStart),
                                    end: session.end.map { shiftedByOffset(session.fileStart + ($0 - session.start)) },
                                    fileStart: session.fileStart)
        }
    }

    /// Puts the sessions into the session log. Lock held.
    func logSessions() throws(WriterError) {
        guard sessionLog != nil else { return }
        let sessions = fileSessions().map { SessionLog.Session(start: $0.start, end: $0.end) }
        try updateSessionLog { $0.sessions = sessions }
    }
}
