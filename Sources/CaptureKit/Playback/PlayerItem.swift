import CFFmpeg

/// A media file opened for reading back, like AVPlayerItem: its timing and
/// tracks. Item time 0 is the start of the file's timeline, so a stream
/// whose timestamps begin anywhere (MPEG-TS) still plays from 0.
public final class PlayerItem {
    public let path: String
    let file: MediaFile

    public init(path: String) throws(PlaybackError) {
        self.path = path
        self.file = try MediaFile(path: path)
    }

    /// How long the item plays, or indefinite when the file does not say.
    public var duration: MediaTime { file.duration }

    /// The earliest presentation time in the file's own timestamps.
    public var startTime: MediaTime { file.startTime }

    /// Where item time 0 lies in the file's own timestamps: the start of an
    /// MPEG-TS or MPEG-PS stream, 0 for other containers.
    public var timelineOrigin: MediaTime { file.timelineOrigin }

    /// libavformat's name for the container (`mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm` …).
    public var containerName: String { String(cString: file.context.pointee.iformat.pointee.name) }

    /// Whether the file has a video track.
    public var hasVideo: Bool { file.bestStream(AVMEDIA_TYPE_VIDEO) != nil }
}
