#if canImport(Glibc)
import Glibc
#endif

/// The limits of a recording and what reaching one means: stop at the
/// duration limit (exactly at it), before the size limit or the free-space
/// floor would be passed, or start the next file at a segment's end. Asked
/// for every sample on the writing thread; it answers with a decision and
/// keeps only the free-space bookkeeping.
struct RecordingLimits {
    /// The whole recording's limits, over every file.
    let maxDuration: MediaTime
    let maxSize: Int64
    /// Each file's limits (AVFoundation's `maxRecordedDuration` and
    /// `maxRecordedFileSize`): reached, they stop the recording too.
    let maxFileDuration: MediaTime
    let maxFileSize: Int64
    let minFreeSpace: Int64
    let segmentDuration: MediaTime
    let segmentSize: Int64
    /// At the free-space floor, ask for room (the recording deletes its
    /// oldest files) rather than stop.
    let reclaimsSpace: Bool
    /// The bytes free on the volume holding a path (statvfs(3)).
    let freeSpaceQuery: (String) -> Int64?

    /// How far before a timed cut (a duration limit, a segment's end) a
    /// video frame may begin and still be taken as at the cut, which then
    /// falls at the frame. A file's clock ticks at 90 kHz (MP4, MOV) or
    /// 1 kHz (Matroska): a frame a nanosecond before the cut would be
    /// written at the cut's own tick, where it never shows. Far shorter
    /// than any frame interval.
    static let frameCutTolerance = MediaTime(value: 1_000_000, timescale: MonotonicClock.timescale)

    /// What reaching a limit asks for.
    enum Decision: Equatable {
        case none
        case stop(at: MediaTime, reason: RecordingStopReason)
        case switchFile(at: MediaTime)
        /// The free-space floor is reached and the recording makes room
        /// rather than stop: `bytes` more must be freed (stop at `at` when
        /// nothing can be).
        case reclaimSpace(bytes: Int64, at: MediaTime)
        /// A segment is due but the next file must begin at a keyframe, which has not come.
        case keyframeNeeded
    }

    // The volume is asked four times a second; in between, what the files
    // will hold beyond what was on disk when it answered counts against
    // what it said. (Not what they were estimated to hold then: the muxer
    // buffers a fragment and the index comes at the end, and the volume
    // had not seen those bytes.)
    private var lastFreeSpaceCheck: Int64 = 0
    private var lastFreeSpace: Int64?
    private var onDiskAtFreeSpaceCheck: Int64 = 0

    init(maxDuration: MediaTime, maxSize: Int64, maxFileDuration: MediaTime = .invalid, maxFileSize: Int64 = 0,
         minFreeSpace: Int64, segmentDuration: MediaTime, segmentSize: Int64, reclaimsSpace: Bool = false,
         freeSpaceQuery: @escaping (String) -> Int64? = { RecordingLimits.freeSpace(near: $0) }) {
        self.maxDuration = maxDuration
        self.maxSize = maxSize
        self.maxFileDuration = maxFileDuration
        self.maxFileSize = maxFileSize
        self.minFreeSpace = minFreeSpace
        self.segmentDuration = segmentDuration
        self.segmentSize = segmentSize
        self.reclaimsSpace = reclaimsSpace
        self.freeSpaceQuery = freeSpaceQuery
    }

    /// The decision for `sample` (at `time`) reaching `file`, whose session
    /// runs; `closedDuration` and `closedBytes` are the files finished
    /// before it. With `timedOnly`, only the limits that fall at a time set
    /// in advance (duration, segment duration); the others cut at a video
    /// frame's time. With `timedCutsAtKeyframes` (copied H.264/HEVC) a
    /// segment of a set duration begins only at a keyframe, with
    /// `sizeCutsAtKeyframes` (copied, or from a shared encoder, which makes
    /// a keyframe at a time set in advance but cannot know a size cut's) one
    /// cut by size.
    mutating func decision(for file: RecordingFileWriter, sample: SampleBuffer, at time: MediaTime, timedOnly: Bool,
                           closedDuration: MediaTime, closedBytes: Int64, timedCutsAtKeyframes: Bool, sizeCutsAtKeyframes: Bool) -> Decision {
        guard let start = file.sessionStart, file.cutTime == nil else { return .none }
        let keyframe: Bool
        let reach: MediaTime
        // Where a timed cut reached at this sample falls: at the limit, or
        // at a frame that begins just short of it.
        var cut = { (limit: MediaTime) in limit }
        switch sample {
        case .video(let video):
            keyframe = video.isKeyframe
            // A frame just short of a timed cut is taken as at it, and the
            // cut falls before it (see `frameCutTolerance`).
            reach = time + Self.frameCutTolerance
            cut = { min($0, time) }
        case .audio(let audio):
            keyframe = false
            // The audio buffer that reaches a timed limit is trimmed there.
            reach = audio.presentationTime + audio.duration
        }
        // A segment that must wait for a keyframe (copied or shared video).
        var segmentWaits = false
        // Duration: the cut falls exactly at the limit, between frames (or
        // at a frame that begins just short of it).
        if maxDuration.isNumeric {
            let limitTime = start + (maxDuration.nanoseconds - closedDuration - file.closedDuration)
            if reach >= limitTime { return .stop(at: cut(limitTime), reason: .maxDuration) }
        }
        if maxFileDuration.isNumeric {
            let limitTime = start + (maxFileDuration.nanoseconds - file.closedDuration)
            if reach >= limitTime { return .stop(at: cut(limitTime), reason: .maxDuration) }
        }
        if segmentDuration.isNumeric {
            let segmentEnd = start + (segmentDuration.nanoseconds - file.closedDuration)
            if reach >= segmentEnd {
                // Copied H.264/HEVC: the next segment starts at a keyframe.
                if !timedCutsAtKeyframes { return .switchFile(at: cut(segmentEnd)) }
                if keyframe { return .switchFile(at: time) }
                segmentWaits = true
            }
        }
        if timedOnly { return segmentWaits ? .keyframeNeeded : .none }
        // Size: stop (or start the next file) before the next frames and the
        // index could pass the limit.
        let estimate = file.estimatedSize
        if file.lastEstimate > 0 { file.largestStep = max(file.largestStep, estimate - file.lastEstimate) }
        file.lastEstimate = estimate
        let margin = 2 * file.largestStep + 32 * 1024
        if maxSize > 0, closedBytes + estimate + margin >= maxSize { return .stop(at: time, reason: .maxSize) }
        if maxFileSize > 0, file.largestPartSize + margin >= maxFileSize { return .stop(at: time, reason: .maxSize) }
        if minFreeSpace > 0 {
            let now = MonotonicClock.nowNanoseconds()
            let written = closedBytes + estimate
            if now - lastFreeSpaceCheck > 250_000_000 {
                lastFreeSpaceCheck = now
                lastFreeSpace = freeSpaceQuery(file.path)
                onDiskAtFreeSpaceCheck = closedBytes + file.sizeOnDisk
            }
            if let free = lastFreeSpace {
                let available = free - max(0, written - onDiskAtFreeSpaceCheck)
                if available < minFreeSpace + margin {
                    if reclaimsSpace { return .reclaimSpace(bytes: minFreeSpace + margin - available, at: time) }
                    return .stop(at: time, reason: .minFreeSpace)
                }
            }
        }
        // A segment's size is each file's (with one file per camera, the largest).
        if segmentSize > 0, file.largestPartSize + margin >= segmentSize {
            if !sizeCutsAtKeyframes || keyframe { return .switchFile(at: time) }
            segmentWaits = true
        }
        return segmentWaits ? .keyframeNeeded : .none
    }

    /// `bytes` were freed on the volume (files deleted to make room): they
    /// count as free until the volume is next asked, which says how much
    /// really is.
    mutating func freed(_ bytes: Int64) {
        if let free = lastFreeSpace { lastFreeSpace = free + bytes }
    }

    /// Bytes available to unprivileged users on the volume holding `path`.
    static func freeSpace(near path: String) -> Int64? {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        guard let info = try? Posix.statvfs(directory.isEmpty ? "/" : directory) else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
