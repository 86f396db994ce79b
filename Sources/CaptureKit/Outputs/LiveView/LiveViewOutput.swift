/// Live views of a running session's cameras as JPEG pictures (see `LiveViewSettings`).
public final class LiveViewOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: placeholder; the views are guarded by a lock.
    public override init() { super.init() }

    /// The views being watched now, and what each has done.
    public var statistics: [LiveViewStatistics] { [] }
    /// Viewers that have left, their pictures and drops (views' totals include the viewers watching now).
    public var viewerCount: Int { 0 }
    /// Viewers at once, at most.
    public var maximumViewerCount: Int = 64
}
