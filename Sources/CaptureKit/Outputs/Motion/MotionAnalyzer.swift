#if canImport(Glibc)
import Glibc
#endif

/// Scores how much of a picture changed against a running background: the
/// share (percent) of a frame's thumbnail cells whose luma differs from the
/// background by more than `cellThreshold`, once the change that every
/// cell shares (light getting brighter or darker) is taken out. The
/// background follows each frame with a time constant of
/// `backgroundTimeConstant` (cells that changed four times slower, so that
/// what moves leaves no ghost behind), so slow light changes and things
/// that stop moving fade into it; sensor noise is averaged away in the cells.
struct MotionAnalyzer {
    /// A cell counts as changed past this difference in mean luma (0–255).
    var cellThreshold: Float = 20
    /// How fast the background takes on a new picture (seconds of media time).
    var backgroundTimeConstant = 1.0

    private var background: [Float] = []
    private var backgroundSize = (width: 0, height: 0)
    private var lastTime: MediaTime?
    private var firstTime: MediaTime?

    /// The score of `thumbnail` taken at `time`, and the background updated
    /// with it. The first frame becomes the background, and frames score 0
    /// for one time constant after it, while the background settles (one
    /// picture holds its noise; a running mean of many does not).
    mutating func score(_ thumbnail: LumaThumbnail, at time: MediaTime) -> Double {
        defer { lastTime = time }
        guard backgroundSize == (thumbnail.width, thumbnail.height), let lastTime, let firstTime, time > lastTime else {
            background = thumbnail.values
            backgroundSize = (thumbnail.width, thumbnail.height)
            firstTime = time
            return 0
        }
        let settling = (time - firstTime).seconds < backgroundTimeConstant
        let count = thumbnail.values.count
        var shift: Float = 0
        for index in 0..<count { shift += thumbnail.values[index] - background[index] }
        shift /= Float(count)
        // The background moves toward the picture by the share of the time constant that passed.
        let elapsed = (time - lastTime).seconds
        let weight = Float(1 - exp(-elapsed / backgroundTimeConstant))
        var changed = 0
        for index in 0..<count {
            let difference = thumbnail.values[index] - background[index]
            let moved = !settling && abs(difference - shift) > cellThreshold
            if moved { changed += 1 }
            background[index] += (moved ? weight / 4 : weight) * difference
        }
        return settling ? 0 : Double(changed) * 100 / Double(count)
    }
}
