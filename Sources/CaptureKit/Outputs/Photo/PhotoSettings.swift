import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The file format of a photo.
public enum PhotoFileFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// JPEG: a camera's MJPEG frame as it came, else encoded (an H.264 or
    /// HEVC frame decoded from its keyframe first).
    case jpeg
    /// PNG, 8-bit RGB.
    case png
    /// The frame's bytes as the camera delivered them, unprocessed, with a
    /// JSON description beside them (see `PhotoOutput.rawSidecarPath(for:)`).
    case raw

    /// The format a file name's extension implies (.jpg/.jpeg, .png, .raw), or nil.
    public init?(path: String) {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "raw": self = .raw
        default: return nil
        }
    }
}

/// Whether the flash lights the photo, like AVCaptureDevice.FlashMode.
public enum PhotoFlashMode: String, Sendable, Hashable, CaseIterable, Codable {
    case off
    /// Always: the V4L2 flash strobe, or the torch for the frame.
    case on
    /// Only when the scene is dark (judged from a frame's mean luma).
    case auto
}

/// A pixel size of a photo.
public struct PhotoDimensions: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}

/// What one photo capture asks for, like AVCapturePhotoSettings. Each object
/// carries a unique ID and is used for one request only: passing settings
/// whose ID an output has seen before to `capturePhoto(with:delegate:)` is
/// refused with `PhotoError.settingsReused`. Make a new object (or
/// `PhotoSettings(from:)`) for every request.
public final class PhotoSettings: Sendable {
    /// Unique within the process; every event of the request carries it.
    public let uniqueID: Int64

    /// What may still be changed before the request is made (an output reads
    /// them once, when the request is made).
    private struct Values {
        var format: PhotoFileFormat
        var quality: Int?
        var size: PhotoDimensions?
        var flashMode: PhotoFlashMode
        var outputPath: String?
        var livePhotoMovieFilePath: String?
    }

    private let values: Mutex<Values>

    public var format: PhotoFileFormat {
        get { values.withLock { $0.format } }
        set { values.withLock { $0.format = newValue } }
    }
    /// JPEG quality 1 (smallest) to 100 (best); nil: a high default. Giving a
    /// quality re-encodes a camera's MJPEG frame instead of writing it as it came.
    public var quality: Int? {
        get { values.withLock { $0.quality } }
        set { values.withLock { $0.quality = newValue } }
    }
    /// Scale the photo to this size; nil keeps the frame's size. Not for raw photos.
    public var size: PhotoDimensions? {
        get { values.withLock { $0.size } }
        set { values.withLock { $0.size = newValue } }
    }
    public var flashMode: PhotoFlashMode {
        get { values.withLock { $0.flashMode } }
        set { values.withLock { $0.flashMode = newValue } }
    }
    /// Where the output writes the photo (created new, never overwriting);
    /// nil keeps it in memory only (`CapturedPhoto.fileDataRepresentation`).
    public var outputPath: String? {
        get { values.withLock { $0.outputPath } }
        set { values.withLock { $0.outputPath = newValue } }
    }
    /// Where a live photo movie goes (.mov or .mp4): the frames from
    /// `PhotoOutput.livePhotoMovieDuration / 2` before the photo to as long
    /// after it. nil: no movie.
    public var livePhotoMovieFilePath: String? {
        get { values.withLock { $0.livePhotoMovieFilePath } }
        set { values.withLock { $0.livePhotoMovieFilePath = newValue } }
    }

    private static let counter = Locked<Int64>(0)

    static func nextID() -> Int64 {
        counter.withLock { value in
            value += 1
            return value
        }
    }

    public init(format: PhotoFileFormat = .jpeg, quality: Int? = nil, size: PhotoDimensions? = nil, flashMode: PhotoFlashMode = .off,
                outputPath: String? = nil, livePhotoMovieFilePath: String? = nil) {
        uniqueID = Self.nextID()
        values = Mutex(Values(format: format, quality: quality, size: size, flashMode: flashMode, outputPath: outputPath,
                              livePhotoMovieFilePath: livePhotoMovieFilePath))
    }

    /// The same request with a new unique ID (AVCapturePhotoSettings(from:)).
    public convenience init(from other: PhotoSettings) {
        self.init(format: other.format, quality: other.quality, size: other.size, flashMode: other.flashMode,
                  outputPath: other.outputPath, livePhotoMovieFilePath: other.livePhotoMovieFilePath)
    }
}

/// The settings a request resolved to, like AVCaptureResolvedPhotoSettings:
/// carried by every delegate event of the request.
public struct ResolvedPhotoSettings: Sendable, Hashable {
    /// The ID of the `PhotoSettings` the request was made with.
    public let uniqueID: Int64
    public let format: PhotoFileFormat
    /// The photo's size.
    public let dimensions: PhotoDimensions
    /// Whether the flash fires (or fired) for the photo.
    public let flashFired: Bool
    public let flashMode: PhotoFlashMode
    /// The JPEG quality used, when encoding JPEG.
    public let quality: Int?
    /// Whether the camera's frame is written as it came (MJPEG as JPEG, any raw photo).
    public let isPassthrough: Bool
    /// The camera's pixel format (fourcc) the photo is made from.
    public let sourceFourCC: String
    /// Where the photo is written, when it is.
    public let outputPath: String?
    /// Where the live photo movie is written, when one is asked for.
    public let livePhotoMovieFilePath: String?
}

/// One photo a request produced, like AVCapturePhoto.
public struct CapturedPhoto: Sendable {
    public let resolvedSettings: ResolvedPhotoSettings
    /// The encoded file: JPEG or PNG bytes, or the raw frame.
    public let fileDataRepresentation: [UInt8]
    /// Where it was written, when `outputPath` was set.
    public let path: String?
    /// For raw photos: the JSON description written beside the file.
    public let sidecarPath: String?
    public let dimensions: PhotoDimensions
    /// When the frame was captured, on CLOCK_MONOTONIC (nanoseconds).
    public let timestamp: MediaTime
    /// The frame's sequence number from the device.
    public let sequence: UInt64
    /// For raw photos: how the bytes are laid out.
    public let rawDescription: RawPhotoDescription?

    public var byteCount: Int { fileDataRepresentation.count }
}

/// What a raw photo's bytes are: the camera's fourcc, size and row length.
/// Written as JSON beside the photo (`OUT.json`), with these field names.
public struct RawPhotoDescription: Sendable, Hashable, Codable {
    /// The V4L2 fourcc (`YUYV`, `NV12`, `MJPG` …), or the virtual source's short name.
    public var fourcc: String
    /// The libavutil pixel format the bytes match, or the codec for compressed frames.
    public var pixelFormat: String
    public var width: Int
    public var height: Int
    /// Bytes from one row to the next of the first plane (0 for compressed frames).
    public var bytesPerLine: Int
    /// The number of bytes in the file.
    public var byteCount: Int
    /// Capture time on CLOCK_MONOTONIC, in nanoseconds.
    public var timestampNanoseconds: Int64
    public var sequence: UInt64
    /// Whether the frame decodes on its own: always for raw and MJPEG frames;
    /// for H.264 and HEVC an IDR access unit (with its parameter sets from a camera).
    public var keyframe: Bool
}

/// Why a photo request was refused or failed. Each case names what is wrong.
public enum PhotoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Settings whose unique ID this output has already seen.
    case settingsReused(uniqueID: Int64)
    /// Settings that cannot be met with this camera's format.
    case unsupported(String)
    /// The photo file could not be created or written.
    case cannotWrite(path: String, reason: String)
    /// The file exists already (capctl never overwrites).
    case outputExists(path: String)
    /// Converting or encoding the frame failed.
    case processing(String)
    /// The flash could not be fired, or the camera has none.
    case flash(String)
    /// Capture ended before the photo was taken (session stopped, device lost).
    case captureEnded(String)

    public var description: String {
        switch self {
        case .settingsReused(let id): return "photo settings \(id) were used already; make new settings for every request"
        case .unsupported(let reason): return reason
        case .cannotWrite(let path, let reason): return "\(path): \(reason)"
        case .outputExists(let path): return "\(path): already exists; capctl never overwrites a file"
        case .processing(let reason): return "cannot make the photo: \(reason)"
        case .flash(let reason): return reason
        case .captureEnded(let reason): return reason
        }
    }
}

/// How long the camera runs before a frame may become a photo (exposure and
/// white balance settle, first frames of some sensors are dark).
public enum PhotoWarmup: Sendable, Hashable, CustomStringConvertible {
    /// Skip this many good frames.
    case frames(Int)
    /// Skip frames captured less than this long after the first one.
    case duration(MediaTime)

    public static let none = PhotoWarmup.frames(0)

    public var description: String {
        switch self {
        case .frames(let count): return "\(count)f"
        case .duration(let time): return "\(time.seconds)s"
        }
    }
}
