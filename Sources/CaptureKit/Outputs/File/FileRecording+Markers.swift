/// A recording's markers: placed on any thread at the media time the
/// writing thread last published (what `recordedDuration` says), and handed
/// by the writing thread to the file they land in, whose writers make them
/// chapters as they finish it.
///
/// Why this way: only the writing thread touches files and writers. A
/// marker is placed under `lock` from the anchor that thread publishes with
/// each sample (the file open and its media time so far), and waits in
/// `pendingMarkers` until that thread takes it. The anchor moves off a file
/// before the file is finished, and the pending markers are taken then, so
/// that no marker can name a file that was already finished.
extension FileRecording {
    /// Where a marker placed now goes (published by the writing thread, under `lock`).
    struct MarkerAnchor {
        var fileIndex: Int
        var path: String
        /// Media time in that file, and in the whole recording.
        var fileTime: MediaTime
        var recordingTime: MediaTime
    }

    /// Places a marker at the recording's current media time (any thread).
    func addMarker(title: String) throws(RecordingMarkerError) -> RecordingMarker {
        try RecordingMarkerError.check(title: title)
        return try lock.withLock { () throws(RecordingMarkerError) -> RecordingMarker in
            guard !over, !ending else { throw .notRecording }
            let anchor = markerAnchor
            let marker = RecordingMarker(title: title, time: anchor.fileTime, path: anchor.path, fileIndex: anchor.fileIndex,
                                         recordingTime: anchor.recordingTime)
            pendingMarkers.append(marker)
            return marker
        }
    }

    // MARK: The writing thread

    /// Where a marker placed now goes, with the recording at `total`: the
    /// open file at its media time so far (while paused, the pause point,
    /// where the resume goes on); with no file open, the start of the file
    /// the next resume opens.
    func currentMarkerAnchor(total: MediaTime) -> MarkerAnchor {
        if let file = current {
            return MarkerAnchor(fileIndex: file.index, path: file.path, fileTime: file.duration(upTo: nil), recordingTime: total)
        }
        let number = fileCount + 2
        if nextFileGuess?.number != number || nextPath != nil {
            nextFileGuess = (number, nextPath ?? files.path(number: number))
        }
        return MarkerAnchor(fileIndex: number, path: nextFileGuess?.path ?? "", fileTime: .zero, recordingTime: total)
    }

    /// Hands markers to the files they land in: those just taken from
    /// `pendingMarkers`, and those waiting for their file to open.
    func deliverMarkers(_ arrived: [RecordingMarker]) {
        waitingMarkers += arrived
        guard !waitingMarkers.isEmpty else { return }
        let open = [current].compactMap { $0 } + draining
        waitingMarkers.removeAll { marker in
            guard let file = open.first(where: { $0.index == marker.fileIndex }) else { return false }
            file.add(marker)
            return true
        }
    }

    /// Before `file` is finished: the anchor moves off it, and the markers
    /// placed in it so far reach it.
    func settleMarkers(before file: RecordingFileWriter) {
        let total = closedDuration + (current.map { $0.duration(upTo: nil) } ?? .zero)
        let anchor = currentMarkerAnchor(total: total)
        let arrived = lock.withLock { () -> [RecordingMarker] in
            markerAnchor = anchor
            defer { pendingMarkers = [] }
            return pendingMarkers
        }
        deliverMarkers(arrived)
        // Still waiting for this file: it is not in `draining` any more.
        waitingMarkers.removeAll { marker in
            guard marker.fileIndex == file.index else { return false }
            file.add(marker)
            return true
        }
    }

    /// A file dropped unwritten (paused before its first sample) gives its
    /// markers to the next file, which takes its number.
    func keepMarkers(of file: RecordingFileWriter) {
        waitingMarkers = file.markers + waitingMarkers
        file.markers = []
    }
}

extension RecordingFileWriter {
    /// Puts a marker into every part still being written, as a chapter.
    func add(_ marker: RecordingMarker) {
        markers.append(marker)
        // A writer that failed has no file to mark; its error is reported with the file.
        for part in parts where !part.isFinished { try? part.writer.addChapter(title: marker.title, at: marker.time) }
    }

    /// The markers a finished file of `duration` lists: in time order, none past its end.
    func markers(within duration: MediaTime) -> [RecordingMarker] {
        markers.enumerated()
            .sorted { $0.element.time == $1.element.time ? $0.offset < $1.offset : $0.element.time < $1.element.time }
            .map { entry in
                var marker = entry.element
                if duration.isNumeric, marker.time > duration { marker.time = duration }
                return marker
            }
    }
}
