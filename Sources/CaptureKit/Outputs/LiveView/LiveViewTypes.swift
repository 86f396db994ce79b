import Synchronization

/// What a live view shows: a camera's picture at a size and rate, as JPEG.
/// Views asked with the same settings of the same camera are one view: its
/// frames are encoded once and handed to every viewer.
package struct LiveViewSettings: Sendable, Hashable {
    /// The picture's width; nil: the camera's. Without `height`, the height
    /// follows from the camera's aspect ratio (rounded to an even number).
    package var width: Int?
    /// The picture's height; nil: from `width` and the camera's aspect ratio.
    package var height: Int?
    /// Frames per second; nil, or more than the camera gives: every frame.
    package var frameRate: Double?
    /// JPEG quality, 1 (smallest) to 100 (best); a camera's own MJPEG passed
    /// through keeps the camera's.
    package var quality: Int

    /// The largest side a view may ask for.
    package static let maximumSide = 8192
    /// The lowest rate a view may ask for (one frame a minute).
    package static let minimumFrameRate = 1.0 / 60

    package init(width: Int? = nil, height: Int? = nil, frameRate: Double? = nil, quality: Int = 75) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.quality = quality
    }
}

/// One JPEG picture of a live view.
package struct LiveViewFrame: Sendable {
    /// The JPEG file's bytes (shared by every viewer of the view).
    package let jpeg: [UInt8]
    package let width: Int
    package let height: Int
    /// When its frame was captured, on the session's monotonic clock (`MonotonicClock`).
    package let captureTime: MediaTime
    /// The frame's number in the camera's stream (`VideoSampleBuffer.sequence`).
    package let sequence: UInt64
    /// What a sender made of this picture for the wire, made once for all its viewers.
    package let wireForm = LiveViewFrameWireForm()
}

/// A place kept with a picture (shared by its copies) for what a sender
/// makes of it (its bytes framed for a protocol), so that the view's
/// thread makes it once however many viewers are sent it. Each sender
/// keeps its own type: one value of each type is kept.
package final class LiveViewFrameWireForm: Sendable {
    private let made = Mutex<[ObjectIdentifier: any Sendable]>([:])

    /// The value of this type made of the picture: `make`'s, the first time it is asked for.
    package func value<Value: Sendable>(_ make: () -> Value) -> Value {
        made.withLock { made in
            if let value = made[ObjectIdentifier(Value.self)] as? Value { return value }
            let value = make()
            made[ObjectIdentifier(Value.self)] = value
            return value
        }
    }
}

/// What a live view has done so far.
package struct LiveViewStatistics: Sendable, Hashable {
    /// The camera, by its place among the session's inputs (from 0).
    package var cameraIndex: Int
    /// The camera's name (`CaptureSource.localizedName`) and device path.
    package var cameraName: String
    package var devicePath: String
    package var width: Int
    package var height: Int
    /// Its rate; nil: every frame of the camera.
    package var frameRate: Double?
    package var quality: Int
    /// Whether the camera's own JPEG frames are handed on as they are.
    package var passesThrough: Bool
    /// Viewers watching now.
    package var viewers: Int
    /// Pictures made (encoded, or passed through) since the view began.
    package var framesMade: Int
    /// Frames the view's encoder was too busy to take (the camera went on).
    package var framesSkipped: Int
    /// Pictures handed to viewers, and their bytes, counted per viewer, since the view began.
    package var framesDelivered: Int
    package var bytesDelivered: Int
    /// Pictures a viewer missed (a newer one replaced it before it was taken, or its
    /// connection was full), counted per viewer.
    package var framesDropped: Int
}

/// What every view of one camera has done since the output began, the
/// views that ended included: counters that only grow.
package struct LiveViewTotals: Sendable, Hashable {
    /// The camera, by its place among the session's inputs (from 0).
    package var cameraIndex: Int
    package var framesMade = 0
    package var framesSkipped = 0
    package var framesDelivered = 0
    package var bytesDelivered = 0
    package var framesDropped = 0

    package init(cameraIndex: Int) {
        self.cameraIndex = cameraIndex
    }

    /// Adds a view's counters.
    mutating func add(_ view: LiveViewStatistics) {
        framesMade += view.framesMade
        framesSkipped += view.framesSkipped
        framesDelivered += view.framesDelivered
        bytesDelivered += view.bytesDelivered
        framesDropped += view.framesDropped
    }
}

/// Why a view could not be had.
package enum LiveViewError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The input is not one of the session's cameras.
    case notACamera
    /// The settings cannot make a picture (a size of 0, beyond
    /// `LiveViewSettings.maximumSide`, a rate of 0, a quality outside 1–100).
    case invalidSettings(String)
    /// As many viewers watch as the output takes (`maximumViewerCount`).
    case tooManyViewers(Int)
    /// The session is not running, or stopped while a picture was awaited.
    case notRunning
    /// No frame came from the camera in time (a snapshot's `timeout`).
    case timedOut
    /// The camera's frames could not be decoded, scaled or encoded.
    case encodingFailed(String)

    package var description: String {
        switch self {
        case .notACamera: return "not a camera of the session"
        case .invalidSettings(let reason): return reason
        case .tooManyViewers(let limit): return "\(limit) viewers are watching, the most this output takes"
        case .notRunning: return "the session is not running"
        case .timedOut: return "no frame came from the camera in time"
        case .encodingFailed(let reason): return "the picture could not be made: \(reason)"
        }
    }
}
