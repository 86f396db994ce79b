import Synchronization

/// The bytes behind a sample buffer and what to do when the buffer is done
/// with. A V4L2 capture buffer is lent this way: its memory stays mapped and
/// out of the driver's queue until the last reference goes, and then it is
/// queued again (VIDIOC_QBUF), so buffer lifetime is tied to re-queueing.
public final class SampleStorage: @unchecked Sendable {
    // @unchecked: raw memory. Nobody writes `bytes` while the storage lives (a lent buffer is out of its
    // pool or driver queue until `release`); `release` runs once, in deinit, on whichever thread lets go
    // last, and the closures given capture only owners that are safe from any thread (pools, lenders,
    // the V4L2 buffer queue).
    public let bytes: UnsafeRawBufferPointer
    private let release: (() -> Void)?
    private let owned: UnsafeMutableRawBufferPointer?

    /// Memory someone else owns; `release` runs once when the storage goes.
    public init(lending bytes: UnsafeRawBufferPointer, release: @escaping () -> Void) {
        self.bytes = bytes
        self.release = release
        self.owned = nil
    }

    /// A copy of `source`, owned by the storage.
    public init(copying source: UnsafeRawBufferPointer) {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(source.count, 1), alignment: 64)
        if let base = source.baseAddress, source.count > 0 { memory.baseAddress!.copyMemory(from: base, byteCount: source.count) }
        self.owned = memory
        self.bytes = UnsafeRawBufferPointer(start: memory.baseAddress, count: source.count)
        self.release = nil
    }

    /// `count` bytes owned by the storage, filled by `fill`.
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 64)
        let region = UnsafeMutableRawBufferPointer(start: memory.baseAddress, count: count)
        do { try fill(region) } catch { memory.deallocate(); throw error }
        self.owned = memory
        self.bytes = UnsafeRawBufferPointer(region)
        self.release = nil
    }

    /// `prefix` followed by a copy of `source`, owned by the storage.
    convenience init(prefix: [UInt8], then source: UnsafeRawBufferPointer) {
        self.init(count: prefix.count + source.count) { memory in
            prefix.withUnsafeBytes { memory.copyMemory(from: $0) }
            if source.count > 0 { UnsafeMutableRawBufferPointer(rebasing: memory[prefix.count...]).copyMemory(from: source) }
        }
    }

    deinit {
        owned?.deallocate()
        release?()
    }
}

/// How the bytes of a video sample are laid out.
public enum VideoSampleLayout: Sendable, Hashable {
    /// An uncompressed image in a libavutil pixel format; `bytesPerRow` for
    /// single-plane formats whose rows are padded, nil when rows are packed.
    case raw(PixelFormat, bytesPerRow: Int?)
    /// One compressed frame of the codec libavcodec names `codecName`
    /// (`mjpeg`, `h264`, `hevc` …).
    case compressed(codecName: String)
}

/// One captured video frame, like a CMSampleBuffer: its bytes, layout and
/// size, stamped on CLOCK_MONOTONIC.
public final class VideoSampleBuffer: Sendable {
    public let storage: SampleStorage
    public let layout: VideoSampleLayout
    public let width: Int
    public let height: Int
    /// When the frame was captured, on CLOCK_MONOTONIC (see `MonotonicClock`).
    public let presentationTime: MediaTime
    /// How long it is shown: the device's frame interval, when known.
    public let duration: MediaTime?
    /// The device's frame counter (V4L2 sequence): a gap means frames were lost.
    public let sequence: UInt64
    /// Whether a compressed frame decodes on its own (always true for raw frames).
    public let isKeyframe: Bool
    /// When a compressed frame must be decoded, on the same clock, where that
    /// differs from its presentation time (streams with B-frames); nil otherwise.
    public let decodeTime: MediaTime?

    public init(storage: SampleStorage, layout: VideoSampleLayout, width: Int, height: Int, presentationTime: MediaTime,
                duration: MediaTime?, sequence: UInt64, isKeyframe: Bool = true, decodeTime: MediaTime? = nil) {
        self.storage = storage
        self.layout = layout
        self.width = width
        self.height = height
        self.presentationTime = presentationTime
        self.duration = duration
        self.sequence = sequence
        self.isKeyframe = isKeyframe
        self.decodeTime = decodeTime
    }

    public var bytes: UnsafeRawBufferPointer { storage.bytes }

    /// The image-buffer view of the frame's pixels, as
    /// CMSampleBufferGetImageBuffer gives: pixel format, size and planes,
    /// read in place (read-only: lock it with `.readOnly`, or use
    /// `withLockedBaseAddress`). nil for compressed frames (MJPEG, H.264)
    /// and for bytes too short for the layout. The same object each time.
    public var imageBuffer: SampleImageBuffer? {
        imageBufferCache.withLock { cached in
            if let cached { return cached }
            var made: SampleImageBuffer?
            if case .raw(let format, let bytesPerRow) = layout {
                made = SampleImageBuffer(storage: storage, format: format, width: width, height: height, bytesPerRow: bytesPerRow)
            }
            cached = .some(made)
            return made
        }
    }

    /// Made on first use (it asks libavutil for the planes' layout). A
    /// `Mutex` lives inside the buffer: a frame made costs no lock object of its own.
    private let imageBufferCache = Mutex<SampleImageBuffer??>(nil)
}

/// A run of captured audio frames, interleaved (or planes one after another
/// for planar formats), stamped on CLOCK_MONOTONIC at its first frame.
public final class AudioSampleBuffer: Sendable {
    public let storage: SampleStorage
    public let format: AudioSampleFormat
    public let channels: Int
    public let sampleRate: Int
    public let frameCount: Int
    /// When the first frame was captured, on CLOCK_MONOTONIC.
    public let presentationTime: MediaTime

    public init(storage: SampleStorage, format: AudioSampleFormat, channels: Int, sampleRate: Int, frameCount: Int, presentationTime: MediaTime) {
        self.storage = storage
        self.format = format
        self.channels = channels
        self.sampleRate = sampleRate
        self.frameCount = frameCount
        self.presentationTime = presentationTime
    }

    public var bytes: UnsafeRawBufferPointer { storage.bytes }

    /// The same samples in memory of their own: for keeping audio long (a
    /// stream's queue while it connects), which must not hold the device's
    /// few buffers out of its queue.
    func copied() -> AudioSampleBuffer {
        AudioSampleBuffer(storage: SampleStorage(copying: bytes), format: format, channels: channels, sampleRate: sampleRate,
                          frameCount: frameCount, presentationTime: presentationTime)
    }

    /// How long the buffer plays, in nanoseconds like the capture clock
    /// (so that times add up without a common timescale beyond 32 bits).
    public var duration: MediaTime {
        MediaTime(value: Int64(frameCount), timescale: Int32(sampleRate)).converted(toTimescale: MonotonicClock.timescale)
    }
}

/// A sample from a capture source.
public enum SampleBuffer: Sendable {
    case video(VideoSampleBuffer)
    case audio(AudioSampleBuffer)

    public var presentationTime: MediaTime {
        switch self {
        case .video(let video): return video.presentationTime
        case .audio(let audio): return audio.presentationTime
        }
    }

    public var mediaType: MediaType {
        switch self {
        case .video: return .video
        case .audio: return .audio
        }
    }
}
