#if canImport(Glibc)
import Glibc
#endif

/// Makes a fragmented MP4 or QuickTime file that never finished (a
/// recording that was killed, lost power or ran out of disk) into a regular
/// one, in place: what `AssetWriter.finishWriting()` does to the fragments
/// of a recording that ends cleanly (see `MovieDefragmenter`). The media
/// stays where it is; the index is written after it and the head rewritten.
///
/// The samples are those of every complete fragment, and of a fragment cut
/// short those whose bytes are all there; whatever follows them is cut off.
/// A recording written by `AssetWriter` keeps its sessions and where each
/// track's media starts in the file (see `SessionLog`), so it gets the edits
/// a clean finish would have written (its pauses are already out of the
/// media); other files keep each track's start as their fragments state it.
package enum MovieRepair {
    package struct Track: Sendable, Equatable {
        package var trackID: UInt32
        /// `video`, `audio`, or the handler type as the file names it.
        package var mediaType: String
        package var samples: Int
        /// How long the track plays (its edit list).
        package var duration: MediaTime
    }

    package struct Result: Sendable, Equatable {
        package enum Outcome: String, Sendable {
            /// The fragments became a regular movie.
            case repaired
            /// The file was already a regular movie; nothing was changed.
            case alreadyRegular = "already-regular"
        }

        package var path: String
        package var outcome: Outcome
        /// Fragments whose samples are in the regular movie.
        package var fragments: Int
        package var tracks: [Track]
        package var duration: MediaTime
        /// Bytes after the last usable sample that were cut off.
        package var droppedBytes: Int64
        /// The size of the new index ('moov').
        package var indexBytes: Int
        package var fileSize: Int64
        /// How many recording sessions the writer's log laid out as edits
        /// (pauses between them left out); nil when the file has no log.
        package var sessions: Int?
        /// The chapters (a recording's markers) the writer kept in the file
        /// and the repaired file carries; those past the media that was
        /// saved are left out.
        package var chapters: [MediaChapter] = []
    }

    /// Repairs the file at `path`, or says why it cannot.
    package static func repair(path: String) throws(MovieRepairError) -> Result {
        let file: OutputFile
        do {
            file = try OutputFile(openingExisting: path)
        } catch {
            switch error {
            case .notAFile: throw .notAFile(path: path)
            case .isBusy: throw .inUse(path: path)
            case .open(let failure):
                switch failure.errno {
                case ENOENT, ENOTDIR: throw .noSuchFile(path: path)
                case EACCES, EPERM: throw .permissionDenied(path: path)
                case EISDIR: throw .notAFile(path: path)
                default: throw .io(path: path, error: failure)
                }
            }
        }
        defer { file.closeQuietly() }
        let index: FragmentIndex
        do {
            index = try FragmentIndex.read(file)
        } catch {
            switch error {
            case .io(let failure): throw .io(path: path, error: failure)
            case .problem(let problem):
                switch problem {
                case .notAMovie: throw .notAMovie(path: path, reason: problem.description)
                default: throw .cannotRepair(path: path, reason: problem.description)
                }
            }
        }
        let tracks = index.movie.children?.filter { $0.type == "trak" } ?? []
        let (movieScale, movieDuration) = index.movie.child("mvhd").map { MovieHeader.timing($0.payload, trackHeader: false) } ?? (1000, 0)
        let scale = Int32(clamping: max(movieScale, 1))
        guard index.isFragmented else {
            let hasSamples = tracks.contains { trak in
                guard let stsz = trak.find("mdia", "minf", "stbl", "stsz"), stsz.payload.count >= 12 else { return false }
                return BigEndian.uint32(stsz.payload, at: 8) > 0
            }
            guard hasSamples else {
                throw .cannotRepair(path: path, reason: "its index lists no samples and it has no fragments to rebuild it from")
            }
            return Result(path: path, outcome: .alreadyRegular, fragments: 0,
                          tracks: tracks.map { trak in summary(trak, samples: sampleCount(trak), scale: scale) },
                          duration: MediaTime(value: Int64(clamping: movieDuration), timescale: scale),
                          droppedBytes: 0, indexBytes: Int(index.movieBox.size), fileSize: index.fileSize, sessions: nil)
        }
        guard index.fragmentCount > 0, index.tracks.contains(where: { $0.count > 0 }) else {
            throw .cannotRepair(path: path, reason: "no fragment was completed before it stopped, so it holds no sample that can be recovered")
        }
        guard index.firstFragmentOffset.map({ $0 - index.movieBox.offset >= 24 }) ?? false else {
            throw .cannotRepair(path: path, reason: "its fragments do not follow its movie box")
        }

        let plan = editPlan(index, tracks: tracks, movieScale: scale)
        var patches = [UInt32: TrackPatch]()
        for (position, trak) in tracks.enumerated() {
            guard let tkhd = trak.child("tkhd") else { continue }
            patches[MovieHeader.trackID(tkhd.payload)] = TrackPatch(
                edits: position < plan.edits.count ? plan.edits[position] : [],
                enabled: MovieHeader.isEnabled(tkhd.payload), alternateGroup: MovieHeader.alternateGroup(tkhd.payload))
        }
        let outcome: MovieDefragmenter.Outcome
        var movie: MovieBox
        // The chapters the writer kept, up to where the media was cut off.
        let saved = MediaTime(value: Int64(clamping: plan.duration), timescale: scale)
        let chapters = Chapters.chapters(from: (index.chapterLog?.points ?? []).filter { $0.time <= saved }.map { ($0.time, $0.title) },
                                         duration: saved)
        do {
            movie = try MovieDefragmenter.regularMovie(from: index, timescale: nil, totalDuration: plan.duration, patches: patches)
            Chapters.addNeroChapters(chapters, to: &movie)
            outcome = try MovieDefragmenter(file: file).convert(index, movie: movie)
        } catch {
            switch error {
            case .io(_, let failure): throw .io(path: path, error: failure)
            default: throw .cannotRepair(path: path, reason: error.description)
            }
        }
        let regularTracks = movie.children?.filter { $0.type == "trak" } ?? []
        return Result(path: path, outcome: .repaired, fragments: index.fragmentCount,
                      tracks: regularTracks.map { trak in summary(trak, samples: sampleCount(trak), scale: scale) },
                      duration: MediaTime(value: Int64(clamping: plan.duration), timescale: scale),
                      droppedBytes: outcome.droppedBytes, indexBytes: outcome.movieBytes, fileSize: outcome.fileSize,
                      sessions: plan.sessions, chapters: chapters)
    }

    private static func sampleCount(_ trak: MovieBox) -> Int {
        guard let stsz = trak.find("mdia", "minf", "stbl", "stsz"), stsz.payload.count >= 12 else { return 0 }
        return Int(BigEndian.uint32(stsz.payload, at: 8))
    }

    private static func handler(_ trak: MovieBox) -> String {
        guard let hdlr = trak.find("mdia", "hdlr"), hdlr.payload.count >= 12 else { return "" }
        return BigEndian.fourCC(hdlr.payload[...], at: 8)
    }

    private static func summary(_ trak: MovieBox, samples: Int, scale: Int32) -> Track {
        let tkhd = trak.child("tkhd")?.payload ?? []
        let kind = handler(trak)
        return Track(trackID: tkhd.isEmpty ? 0 : MovieHeader.trackID(tkhd),
                     mediaType: kind == "vide" ? "video" : kind == "soun" ? "audio" : kind,
                     samples: samples,
                     duration: MediaTime(value: Int64(clamping: tkhd.isEmpty ? 0 : MovieHeader.timing(tkhd, trackHeader: true).duration),
                                         timescale: scale))
    }

    /// The edit lists and the movie's duration: from the writer's sessions
    /// when the file keeps them, else each track from where its fragments
    /// put its first sample.
    private static func editPlan(_ index: FragmentIndex, tracks: [MovieBox], movieScale: Int32)
        -> (edits: [[EditEntry]], duration: UInt64, sessions: Int?) {
        let mediaScales = tracks.map { Int32(clamping: max(MovieHeader.mediaTimescale($0) ?? 1, 1)) }
        let samples = tracks.map { trak -> FragmentIndex.TrackSamples? in
            guard let tkhd = trak.child("tkhd") else { return nil }
            let trackID = MovieHeader.trackID(tkhd.payload)
            return index.tracks.first { $0.trackID == trackID }
        }
        if let log = index.sessionLog, !log.isIncomplete, !log.sessions.isEmpty, log.firstDecodeTimes.count == tracks.count {
            var spans = [SessionTimeline.TrackSpan?]()
            for (position, track) in samples.enumerated() {
                guard let track, track.count > 0, let first = log.firstDecodeTimes[position], let decode0 = track.decodeTimes.first else {
                    spans.append(nil)
                    continue
                }
                var ticks = AssetWriter.TrackSpanTicks()
                let durations = track.timelineDurations()
                for sample in 0..<track.count {
                    let pts = first + (track.decodeTimes[sample] - decode0) + Int64(track.compositionOffsets[sample])
                    ticks.cover(pts, pts + Int64(durations[sample]))
                }
                let scale = mediaScales[position]
                spans.append(SessionTimeline.TrackSpan(
                    runs: ticks.runs.map { (MediaTime(value: $0.start, timescale: scale), MediaTime(value: $0.end, timescale: scale)) },
                    firstDecode: MediaTime(value: first, timescale: scale), bridgesGaps: true))
            }
            var sessions = [SessionTimeline.Session]()
            var fileStart = MediaTime.zero
            for session in log.sessions {
                sessions.append(SessionTimeline.Session(start: session.start, end: session.end, fileStart: fileStart))
                if let end = session.end { fileStart = fileStart + (end - session.start) }
            }
            let plan = SessionTimeline.editLists(sessions: sessions, origin: .zero, tracks: spans, mediaTimescales: mediaScales,
                                                 movieTimescale: movieScale)
            return (plan.edits, plan.duration, log.sessions.count)
        }
        // Each track from its first presentation to its end, placed where
        // its fragments' decode times put it relative to the others.
        var extents = [(start: MediaTime, mediaStart: Int64, length: MediaTime)?]()
        for (position, track) in samples.enumerated() {
            guard let track, track.count > 0, let decode0 = track.decodeTimes.first else { extents.append(nil); continue }
            let durations = track.timelineDurations()
            var first = Int64.max, last = Int64.min
            for sample in 0..<track.count {
                let pts = track.decodeTimes[sample] - decode0 + Int64(track.compositionOffsets[sample])
                first = min(first, pts)
                last = max(last, pts + Int64(durations[sample]))
            }
            let scale = mediaScales[position]
            extents.append((MediaTime(value: decode0 + first, timescale: scale), max(0, first), MediaTime(value: last - first, timescale: scale)))
        }
        let origin = extents.compactMap { $0?.start }.min() ?? .zero
        var duration = MediaTime.zero
        let edits = extents.enumerated().map { position, extent -> [EditEntry] in
            guard let extent else { return [] }
            let delay = extent.start - origin
            duration = max(duration, delay + extent.length)
            var planned = [SessionTimeline.Edit]()
            if delay > .zero { planned.append(SessionTimeline.Edit(duration: delay, mediaStart: nil)) }
            planned.append(SessionTimeline.Edit(duration: extent.length, mediaStart: MediaTime(value: extent.mediaStart, timescale: mediaScales[position])))
            return SessionTimeline.rounded(planned, movieTimescale: movieScale, mediaTimescale: mediaScales[position])
        }
        let total = duration.converted(toTimescale: movieScale)
        return (edits, UInt64(max(0, total.isNumeric ? total.value : 0)), nil)
    }
}

/// Why `MovieRepair` could not repair a file.
package enum MovieRepairError: Error, Sendable, Equatable, CustomStringConvertible {
    case noSuchFile(path: String)
    case permissionDenied(path: String)
    /// A directory, device or anything else that is not a regular file.
    case notAFile(path: String)
    /// A recording is still writing the file (it holds the file's lock).
    case inUse(path: String)
    /// Not an MP4 or QuickTime file.
    case notAMovie(path: String, reason: String)
    /// An MP4 or QuickTime file that cannot be made regular, and why.
    case cannotRepair(path: String, reason: String)
    case io(path: String, error: SystemCallError)

    package var description: String {
        switch self {
        case .noSuchFile(let path): return "\(path): no such file"
        case .permissionDenied(let path): return "\(path): permission denied (repair rewrites the file in place, so it needs write access)"
        case .notAFile(let path): return "\(path): not a regular file"
        case .inUse(let path): return "\(path): a recording is still writing it; repair it once that recording has stopped"
        case .notAMovie(let path, let reason): return "\(path): cannot repair: \(reason)"
        case .cannotRepair(let path, let reason): return "\(path): cannot repair: \(reason)"
        case .io(let path, let error): return "\(path): \(error.description)"
        }
    }
}
