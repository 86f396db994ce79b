/// Writes a live photo's movie: the frames a `LivePhotoRing` selected,
/// encoded to H.264 in a new .mov or .mp4. Raw frames are encoded as they
/// are; compressed ones are decoded first (H.264 and HEVC from the keyframe
/// the selection starts at), and only the pictures of the span are written.
enum LivePhotoMovieWriter {
    /// The movie of `selection` around the frame captured at `still`
    /// (nanoseconds), written to `path`. `configuration` is what the
    /// camera's compressed frames need and do not carry (empty for a camera).
    static func write(_ selection: LivePhotoRing.Selection, still: Int64, path: String, resolved: ResolvedPhotoSettings,
                      configuration: [UInt8], converter: PhotoFrameConverter) throws(PhotoError) -> LivePhotoMovie {
        let scale = MonotonicClock.timescale
        guard let first = selection.shown.first, let last = selection.shown.last else {
            throw .processing("no frames were kept for the live photo movie")
        }
        let start = first.presentationTime.converted(toTimescale: scale)
        // On the capture clock's nanosecond scale: 1/30 s and 1 ns have no common 32-bit timescale.
        let end = last.presentationTime.converted(toTimescale: scale) + (last.duration ?? .zero).converted(toTimescale: scale)
        var frames = 0
        let writer: AssetWriter, input: AssetWriterInput
        do throws(WriterError) {
            writer = try AssetWriter(outputPath: path)
            let settings = VideoOutputSettings(codec: .h264, width: first.width, height: first.height, quality: 20,
                                               expectedFrameDuration: first.duration, encoderOptions: ["tune": "zerolatency"])
            input = AssetWriterInput(outputSettings: .video(settings))
            try writer.add(input)
            try writer.startWriting()
            try writer.startSession(atSourceTime: first.presentationTime)
        } catch {
            throw failure(error, path: path)
        }
        do throws(PhotoError) {
            switch first.layout {
            case .raw:
                for frame in selection.shown {
                    guard case .raw(let format, let bytesPerRow) = frame.layout else { continue }
                    do throws(WriterError) {
                        try input.appendPixels(frame.bytes, format: format, width: frame.width, height: frame.height, bytesPerRow: bytesPerRow,
                                               presentationTime: frame.presentationTime, duration: frame.duration)
                    } catch { throw failure(error, path: path) }
                    frames += 1
                }
            case .compressed(let codec):
                let lastShown = last.presentationTime
                try converter.pictures(of: selection.feed, codec: codec, configuration: configuration, format: .yuv420p,
                                       width: first.width, height: first.height,
                                       wanted: { $0 >= start && $0 <= lastShown }) { picture, time throws(PhotoError) in
                    do throws(WriterError) {
                        try input.append(picture, presentationTime: time, duration: first.duration)
                    } catch {
                        throw failure(error, path: path)
                    }
                    frames += 1
                }
            }
        } catch {
            writer.cancelWriting()
            throw error
        }
        do throws(WriterError) {
            try input.markAsFinished()
            try writer.endSession(atSourceTime: end)
            try writer.finishWriting()
        } catch {
            throw failure(error, path: path)
        }
        return LivePhotoMovie(resolvedSettings: resolved, path: path, duration: end - start,
                              photoDisplayTime: MediaTime(value: still, timescale: scale) - start, frames: frames,
                              bytes: RecordingFileWriter.size(of: path))
    }

    private static func failure(_ error: WriterError, path: String) -> PhotoError {
        if case .outputExists = error { return .outputExists(path: path) }
        return .cannotWrite(path: path, reason: error.description)
    }
}
