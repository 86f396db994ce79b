import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// A photo made from its frame (JPEG, PNG or raw with its description), and
/// the live photo movie around it (processing thread only).
extension PhotoOutput {
    // MARK: Making the photo

    func makePhoto(from photo: PhotoFrame, resolved: ResolvedPhotoSettings) throws(PhotoError) -> CapturedPhoto {
        let frame = photo.chosen
        let bytes: [UInt8]
        var description: RawPhotoDescription?
        if resolved.isPassthrough {
            bytes = Array(frame.bytes)
            if resolved.format == .raw {
                let format = videoFormat
                var pixelFormat = "", bytesPerLine = 0
                switch frame.layout {
                case .compressed(let codec): pixelFormat = codec
                case .raw(let raw, let rowBytes):
                    pixelFormat = raw.name
                    bytesPerLine = rowBytes ?? Int(av_image_get_linesize(raw.raw, Int32(frame.width), 0))
                }
                description = RawPhotoDescription(
                    fourcc: format?.fourcc ?? "", pixelFormat: pixelFormat, width: frame.width, height: frame.height, bytesPerLine: bytesPerLine,
                    byteCount: bytes.count, timestampNanoseconds: frame.presentationTime.converted(toTimescale: MonotonicClock.timescale).value,
                    sequence: frame.sequence, keyframe: frame.isKeyframe)
            }
        } else {
            let imageFormat: ImageFormat = resolved.format == .png ? .png : .jpeg
            let image = try converter.image(of: photo, configuration: videoFormat?.codecConfiguration ?? [], format: imageFormat.pixelFormat,
                                            width: resolved.dimensions.width, height: resolved.dimensions.height)
            do { bytes = try ImageFile.encode(image, as: imageFormat, quality: resolved.quality) } catch { throw .processing(error.description) }
        }
        var sidecar: String?
        if let path = resolved.outputPath {
            if let description {
                sidecar = Self.rawSidecarPath(for: path)
                try write(Array(Self.json(description).utf8), to: sidecar!)
                do throws(PhotoError) { try write(bytes, to: path) } catch {
                    try? Posix.unlink(sidecar!)
                    throw error
                }
            } else {
                try write(bytes, to: path)
            }
        }
        return CapturedPhoto(resolvedSettings: resolved, fileDataRepresentation: bytes, path: resolved.outputPath, sidecarPath: sidecar,
                             dimensions: resolved.dimensions, timestamp: frame.presentationTime, sequence: frame.sequence,
                             rawDescription: description)
    }

    private func write(_ bytes: [UInt8], to path: String) throws(PhotoError) {
        do { try ImageFile.write(bytes, to: path) } catch {
            if case .outputExists = error { throw .outputExists(path: path) }
            throw .cannotWrite(path: path, reason: error.description.hasPrefix(path + ": ") ? String(error.description.dropFirst(path.count + 2)) : error.description)
        }
    }

    /// The description as one JSON object (keys sorted, like capctl's JSON).
    static func json(_ description: RawPhotoDescription) -> String {
        func quoted(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                default:
                    if scalar.value < 0x20 { out += String(format: scalar.value) } else { out.unicodeScalars.append(scalar) }
                }
            }
            return out + "\""
        }
        func String(format value: UInt32) -> Swift.String {
            let hex = Swift.String(value, radix: 16)
            return "\\u" + Swift.String(repeating: "0", count: 4 - hex.count) + hex
        }
        return "{\"byteCount\":\(description.byteCount),\"bytesPerLine\":\(description.bytesPerLine),\"fourcc\":\(quoted(description.fourcc)),"
            + "\"height\":\(description.height),\"keyframe\":\(description.keyframe),\"pixelFormat\":\(quoted(description.pixelFormat)),\"sequence\":\(description.sequence),"
            + "\"timestampNanoseconds\":\(description.timestampNanoseconds),\"width\":\(description.width)}\n"
    }

    // MARK: Live photo movie

    /// Waits until frames up to half the movie's length after the photo are
    /// in the ring, then writes the movie from the ring. Answers why capture
    /// ended, when it did meanwhile (the movie then holds what there is).
    func makeLiveMovie(around photo: VideoSampleBuffer, path: String, resolved: ResolvedPhotoSettings,
                               queue: BoundedQueue<Message>) throws(PhotoError) -> (LivePhotoMovie, String?) {
        guard lock.withLock({ liveEnabled }) else {
            throw .unsupported("live photos need isLivePhotoCaptureEnabled set before the session starts")
        }
        let scale = MonotonicClock.timescale
        let half = livePhotoMovieDuration.converted(toTimescale: scale).value / 2
        let still = photo.presentationTime.converted(toTimescale: scale).value
        var ended: String?
        while ended == nil {
            let latest = capture.withLock { $0.ring.latest } ?? still
            if latest >= still + half { break }
            if let message = queue.take(timeoutNanoseconds: 20_000_000) {
                switch message {
                case .request(let request): pending.append(request)
                case .frame: break
                case .ended(let reason): ended = reason
                }
            } else if queue.isClosed {
                ended = lock.withLock { endReason } ?? "the session stopped"
            }
        }
        guard let selection = capture.withLock({ $0.ring.selection(from: still - half, to: still + half) }) else {
            throw .processing("no frames were kept for the live photo movie")
        }
        let movie = try LivePhotoMovieWriter.write(selection, still: still, path: path, resolved: resolved,
                                                   configuration: videoFormat?.codecConfiguration ?? [], converter: converter)
        return (movie, ended)
    }
}
