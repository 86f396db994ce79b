import Synchronization

/// The link between one input and one output of a session, like
/// AVCaptureConnection: whether the input's samples reach the output, and
/// for video how the recorded picture is to be shown. A session makes one
/// for each input and output pair once both are in it (`CaptureOutput.connections`).
///
/// Rotation and mirroring are written as the video track's display matrix
/// (MP4 and QuickTime: players turn the picture); the pixels are not
/// turned, so an encoder shared with other outputs stays shared. Matroska,
/// WebM and MPEG-TS have no such field in this build of libavformat: there
/// the picture plays as captured. Changes take effect at the next recording.
public final class CaptureConnection: Sendable {
    /// The input whose samples flow through it.
    public let input: CaptureInput
    public var mediaType: MediaType { input.mediaType }

    private struct State {
        var isEnabled = true
        var rotationAngle: Double = 0
        var isMirrored = false
    }
    private let state = Mutex(State())

    init(input: CaptureInput) {
        self.input = input
    }

    /// Whether the input's samples reach the output. A video data output or
    /// a live view gets none while it is disabled; a recording or a stream
    /// leaves a disabled connection's input out of what it begins next
    /// (one under way keeps its tracks, as its file's layout is set).
    public var isEnabled: Bool {
        get { state.withLock { $0.isEnabled } }
        set { state.withLock { $0.isEnabled = newValue } }
    }

    /// Whether `angle` (degrees clockwise) can be set: a right angle, on a video connection.
    public func isVideoRotationAngleSupported(_ angle: Double) -> Bool {
        mediaType == .video && angle.truncatingRemainder(dividingBy: 90) == 0
    }

    /// How far clockwise, in degrees, the recorded picture is turned for
    /// display (0, 90, 180, 270). An angle that is not supported is ignored,
    /// as AVFoundation refuses it.
    public var videoRotationAngle: Double {
        get { state.withLock { $0.rotationAngle } }
        set {
            guard isVideoRotationAngleSupported(newValue) else { return }
            let normalized = newValue.truncatingRemainder(dividingBy: 360)
            state.withLock { $0.rotationAngle = normalized < 0 ? normalized + 360 : normalized }
        }
    }

    /// Whether the picture can be mirrored: video connections only.
    public var isVideoMirroringSupported: Bool { mediaType == .video }

    /// Whether the recorded picture is shown mirrored (left and right
    /// swapped), as a front camera's preview is.
    public var isVideoMirrored: Bool {
        get { state.withLock { $0.isMirrored } }
        set { if isVideoMirroringSupported { state.withLock { $0.isMirrored = newValue } } }
    }

    /// What a writer input records of it.
    var transform: VideoTransform {
        state.withLock { VideoTransform(rotationAngle: $0.rotationAngle, isMirrored: $0.isMirrored) }
    }
}

/// How a video track is shown: turned clockwise by a right angle, and
/// mirrored (before it is turned). Written as the track's display matrix.
public struct VideoTransform: Sendable, Hashable {
    public var rotationAngle: Double
    public var isMirrored: Bool

    public static let identity = VideoTransform(rotationAngle: 0, isMirrored: false)

    public init(rotationAngle: Double, isMirrored: Bool) {
        self.rotationAngle = rotationAngle
        self.isMirrored = isMirrored
    }
}

extension CaptureOutput {
    /// The output's connections, one for each input of the session it is
    /// in (inputs of a media type it takes), in the session's order.
    public var connections: [CaptureConnection] { connectionList.withLock { $0 } }

    /// The first connection that carries `mediaType`, or nil.
    public func connection(with mediaType: MediaType) -> CaptureConnection? {
        connections.first { $0.mediaType == mediaType }
    }

    /// The connection from `input`, if there is one.
    func connection(from input: CaptureInput) -> CaptureConnection? {
        connections.first { $0.input === input }
    }

    /// Whether `input`'s samples are to reach this output.
    func isConnectionEnabled(for input: CaptureInput) -> Bool {
        connection(from: input)?.isEnabled ?? true
    }

    /// Makes the connections match the session's inputs: those kept keep their settings.
    func updateConnections(inputs: [CaptureInput]) {
        let types = connectedMediaTypes
        connectionList.withLock { list in
            list = inputs.filter { types.contains($0.mediaType) }.map { input in
                list.first { $0.input === input } ?? CaptureConnection(input: input)
            }
        }
    }
}
