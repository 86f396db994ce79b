/// The frame a photo request chose, with the frames decoding it needs: for
/// a camera whose frames decode on their own (raw, MJPEG) the frame alone;
/// for H.264 or HEVC the keyframe (an IDR access unit) before it and every
/// frame between, in capture order, the chosen frame last.
struct PhotoFrame {
    /// The frame the request chose: its bytes, time and sequence are the photo's.
    let chosen: VideoSampleBuffer
    /// The frames before it that decoding it needs, from its keyframe on.
    let references: [VideoSampleBuffer]

    init(_ chosen: VideoSampleBuffer, references: [VideoSampleBuffer] = []) {
        self.chosen = chosen
        self.references = references
    }

    /// Every frame to decode, in order: the references, then the chosen frame.
    var frames: [VideoSampleBuffer] { references + [chosen] }
}

/// What a photo output keeps of a camera's stream so that any frame it
/// chooses can be decoded: for codecs with inter frames (H.264, HEVC), copies
/// of the latest keyframe and every frame since. Frames before the first
/// keyframe cannot be decoded and are not eligible; nor are those after a
/// lost (empty) frame, or after the run outgrew `byteLimit`, until the next
/// keyframe starts a new run. Frames of other codecs, and raw frames, are
/// always eligible and nothing is kept.
///
/// Owned by the capture state of a photo output (under its lock).
struct PhotoFrameRun {
    /// Whether frames need the keyframe before them to be decoded.
    let isInterCoded: Bool
    /// The most bytes the run keeps; a longer run waits for the next keyframe.
    let byteLimit: Int
    /// The latest keyframe and the frames after it (copies), or nothing while no frame is eligible.
    private(set) var frames: [VideoSampleBuffer] = []
    private var bytes = 0

    /// A run for a camera delivering frames laid out as `layout`.
    init(layout: VideoSampleLayout, byteLimit: Int) {
        if case .compressed(let codec) = layout { isInterCoded = AccessUnit.Codec(codecName: codec) != nil } else { isInterCoded = false }
        self.byteLimit = byteLimit
    }

    /// Whether frames must be copied for `take(_:)`: only inter-coded ones are kept.
    var keepsFrames: Bool { isInterCoded }

    /// Takes the next captured frame (a copy the run may keep, for
    /// inter-coded streams); answers whether it may become a photo.
    mutating func take(_ frame: VideoSampleBuffer) -> Bool {
        guard isInterCoded else { return frame.bytes.count > 0 }
        if frame.bytes.count == 0 {
            // A lost frame: what follows refers to it, until the next keyframe.
            reset()
            return false
        }
        if frame.isKeyframe { reset() } else if frames.isEmpty { return false }
        guard bytes + frame.bytes.count <= byteLimit else {
            reset()
            return false
        }
        frames.append(frame)
        bytes += frame.bytes.count
        return true
    }

    /// The photo frame for `frame`, which `take(_:)` just found eligible:
    /// for an inter-coded stream the run's copy of it, after its references.
    func photoFrame(for frame: VideoSampleBuffer) -> PhotoFrame {
        guard isInterCoded, let kept = frames.last else { return PhotoFrame(frame) }
        return PhotoFrame(kept, references: Array(frames.dropLast()))
    }

    private mutating func reset() {
        frames = []
        bytes = 0
    }
}
