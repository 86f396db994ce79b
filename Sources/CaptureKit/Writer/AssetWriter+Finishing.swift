import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Finishing MP4 and QuickTime files: the regular movie made from the
/// fragments in place, or the movie header patched with edit lists and
/// durations.
extension AssetWriter {
    // MARK: Finalizing MP4 / QuickTime

    func chooseMovieTimescale(_ movie: MovieBox) throws(WriterError) -> UInt32 {
        if settings.movieTimeScale > 0 { return UInt32(settings.movieTimeScale) }
        let tracks = movie.children?.filter { $0.type == "trak" } ?? []
        let scales = tracks.compactMap(MovieHeader.mediaTimescale)
        let videoIndex = inputList.firstIndex { $0.mediaType == .video }
        if let videoIndex, videoIndex < scales.count { return scales[videoIndex] }
        return scales.first ?? 1000
    }

    func trackPatches(movie: MovieBox, edits: [[EditEntry]]?) throws(WriterError) -> [UInt32: TrackPatch] {
        let tracks = movie.children?.filter { $0.type == "trak" } ?? []
        guard tracks.count == inputList.count else {
            throw .malformedOutput("the file has \(tracks.count) tracks for \(inputList.count) inputs")
        }
        var patches = [UInt32: TrackPatch]()
        for (index, trak) in tracks.enumerated() {
            guard let tkhd = trak.child("tkhd") else { throw .malformedOutput("a track has no header") }
            let input = inputList[index]
            let group = groupList.firstIndex { $0.inputs.contains { $0 === input } }
            patches[MovieHeader.trackID(tkhd.payload)] = TrackPatch(
                edits: edits?[index], enabled: input.marksOutputTrackAsEnabled,
                alternateGroup: group.map { UInt16($0 + 1) } ?? 0)
        }
        return patches
    }

    /// Writes the edit lists (one edit a track, which says where its media
    /// starts: encoder priming, reordering delay), the movie time scale and
    /// track flags, and moves the index to the front if asked.
    func finalizeMovie() throws(WriterError) {
        let patcher = MoviePatcher(file: file)
        let boxes = try patcher.topLevelBoxes()
        let (_, movie) = try patcher.readMovie(boxes)
        let movieScale = try chooseMovieTimescale(movie)
        let plan = editPlan(movie: movie, movieScale: movieScale, sessions: fileSessions(), origin: timeline.origin.map { _ in .zero })
        try patcher.finish(timescale: movieScale, totalDuration: plan?.duration,
                           tracks: trackPatches(movie: movie, edits: plan?.edits), faststart: settings.faststart,
                           chapters: movieChapters(duration: plan?.duration, timescale: movieScale))
    }

    /// The edit lists that lay the tracks written into `sessions` (file
    /// time counted from `origin`), and the movie's duration; nil before any
    /// session. Each track's media time scale is its stream time base. The
    /// sessions follow each other in the media, so each track plays as one
    /// stretch: a gap inside it is samples a device lost, which the sample
    /// before it covers, as in a file written in one piece.
    /// `firstDecodes` overrides where each track's media time 0 is (in its ticks).
    func editPlan(movie: MovieBox, movieScale: UInt32, sessions: [SessionTimeline.Session],
                          origin: MediaTime?, firstDecodes: [Int64?]? = nil) -> (edits: [[EditEntry]], duration: UInt64)? {
        guard let origin else { return nil }
        let tracks = movie.children?.filter { $0.type == "trak" } ?? []
        let mediaScales = tracks.map { Int32(clamping: MovieHeader.mediaTimescale($0) ?? 1000) }
        let spansInTime = spans.enumerated().map { index, span -> SessionTimeline.TrackSpan? in
            let override = firstDecodes.flatMap { index < $0.count ? $0[index] : nil }
            guard let firstDecode = override ?? span.firstDecode, index < mediaScales.count else { return nil }
            let scale = mediaScales[index]
            var runs = span.runs.map { (start: MediaTime(value: $0.start, timescale: scale), end: MediaTime(value: $0.end, timescale: scale)) }
            // The priming decodes to what comes before the first sample: the
            // track plays from that sample on.
            if index < primingDelays.count, primingDelays[index] > .zero, !runs.isEmpty {
                let firstSample = MediaTime(value: firstDecode, timescale: scale) + primingDelays[index]
                runs[0].start = max(runs[0].start, min(firstSample, runs[0].end))
            }
            return SessionTimeline.TrackSpan(
                runs: runs,
                firstDecode: MediaTime(value: firstDecode, timescale: scale), bridgesGaps: true)
        }
        return SessionTimeline.editLists(sessions: sessions, origin: origin, tracks: spansInTime, mediaTimescales: mediaScales,
                                         movieTimescale: Int32(clamping: movieScale))
    }

    /// Turns the fragments written into a regular movie (see
    /// `MovieDefragmenter`): sample tables read back from the fragments,
    /// which must hold every sample handed to the muxer; the edit lists and
    /// durations the sessions give, as for a file written in one piece.
    func finalizeFragmentsAsRegularMovie() throws(WriterError) {
        let index: FragmentIndex
        do throws(FragmentIndex.ReadFailure) {
            index = try FragmentIndex.read(file)
        } catch {
            switch error {
            case .io(let error): throw .io(path: outputPath, error: error)
            case .problem(let problem): throw .malformedOutput("the fragments cannot be read back: \(problem)")
            }
        }
        for (position, track) in index.tracks.enumerated() where position < spans.count {
            guard track.count == spans[position].samples, !track.isCut else {
                throw .malformedOutput("track \(position + 1) has \(track.count) samples in its fragments; \(spans[position].samples) were written")
            }
        }
        // Media time 0 of each track is its first sample. Should the muxer
        // have moved the first sample, the others tell where 0 is.
        let firstDecodes = index.tracks.enumerated().map { position, track -> Int64? in
            guard position < spans.count, let last = spans[position].lastDecode, let fileFirst = track.decodeTimes.first,
                  let fileLast = track.decodeTimes.last else { return nil }
            return last - (fileLast - fileFirst)
        }
        let movieScale = try chooseMovieTimescale(index.movie)
        let plan = editPlan(movie: index.movie, movieScale: movieScale, sessions: fileSessions(),
                            origin: timeline.origin.map { _ in .zero }, firstDecodes: firstDecodes)
        var movie = try MovieDefragmenter.regularMovie(from: index, timescale: movieScale, totalDuration: plan?.duration,
                                                       patches: trackPatches(movie: index.movie, edits: plan?.edits))
        if index.fragmentCount == 0 {
            // Nothing was recorded: a regular movie that plays nothing.
            try MovieDefragmenter(file: file).replaceInPlace(index, movie: movie)
        } else {
            Chapters.addNeroChapters(movieChapters(duration: plan?.duration, timescale: movieScale), to: &movie)
            _ = try MovieDefragmenter(file: file).convert(index, movie: movie)
        }
    }
}
