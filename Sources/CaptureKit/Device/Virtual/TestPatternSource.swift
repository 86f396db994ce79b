
/// A camera that needs no hardware: moving colour bars, a bouncing box and
/// a frame counter, drawn at the asked size, rate and pixel format.
///
/// Frame `n` is stamped `start + n × frameDuration` on CLOCK_MONOTONIC,
/// where `start` is when `run` began. In real time a frame is delivered no
/// earlier than its stamp, like a camera's; otherwise frames come as fast
/// as they are drawn, stamped the same way (for tests and benchmarks).
/// Frame memory comes from a small pool and is reused once the samples
/// holding it are released. When the consumer holds every buffer, a
/// real-time source loses the frame as a camera would (counted in
/// `droppedByDevice`, leaving a gap in `sequence`); one that is not real
/// time waits for a buffer instead.
final class TestPatternSource: CaptureSource, Sendable {
    let mediaType = MediaType.video
    let path: String
    let localizedName: String
    let modelID: String? = nil
    /// The format settled by `open()`.
    var videoFormat: CaptureVideoFormat? { settled.withLock { $0.format } }
    let audioFormat: CaptureAudioFormat? = nil
    /// What was asked for.
    let request: CaptureVideoRequest
    /// Whether frames are paced in real time.
    let realtime: Bool

    /// The size without a request or preset that says otherwise.
    static let defaultSize = (width: 640, height: 480)
    /// The size of the `high` and `photo` presets.
    static let largestSize = (width: 1920, height: 1080)
    static let defaultFramesPerSecond = 30.0
    /// The rates it runs at: one frame every 10 s to 1000 a second.
    static let framesPerSecondRange = 0.1...1000.0
    /// The smallest and largest frame sizes it draws.
    static let minimumSize = (width: 16, height: 16)
    static let maximumSize = (width: 7680, height: 4320)
    /// Buffers the pool makes at most: frames the consumer can hold at once.
    static let poolLimit = 16

    /// What `open()` settled, read once by the capture loop as it starts;
    /// the renderer is then drawn with on the capture thread alone.
    private struct Settled {
        /// The session's start for the next run's clock (`SessionClockedSource`).
        var clockStart: Int64?
        var format: CaptureVideoFormat?
        var renderer: TestPatternRenderer?
        var pool: RecyclingBufferPool?
        var frameDuration = (numerator: Int64(1), denominator: Int64(30))
    }

    private let settled = Locked(Settled())
    private let losses = SampleLossLog()

    /// A test pattern for `request`: its size, or its preset's (`high` and
    /// `photo` give 1920x1080), else 640x480; its rate, else 30 fps; its
    /// pixel format (a libavutil name, or the fourcc YU12, NV12, YUYV or
    /// RGB3), else yuv420p.
    init(request: CaptureVideoRequest = CaptureVideoRequest(), realtime: Bool = true) {
        self.request = request
        self.realtime = realtime
        path = VirtualDevice.testPattern.specifier
        localizedName = VirtualDevice.testPattern.localizedName
    }

    var droppedByDevice: Int { losses.total }
    var lossLog: SampleLossLog? { losses }

    func open() throws(CaptureError) {
        let size = try Self.size(for: request, device: path)
        let rate = request.framesPerSecond ?? Self.defaultFramesPerSecond
        guard rate.isFinite, Self.framesPerSecondRange.contains(rate) else {
            throw .unsupported(path, reason: "\(rate) frames per second is not possible; the test pattern runs at 0.1 to 1000")
        }
        var format = PixelFormat.yuv420p
        if let name = request.pixelFormat {
            guard let named = VirtualPixelFormat.pixelFormat(named: name),
                  VirtualPixelFormat.drawable.contains(where: { $0.format == named }) else {
                throw .unsupported(path, reason: "the test pattern is not drawn in \(name); it is drawn in "
                                   + VirtualPixelFormat.drawable.map { "\($0.format) (\($0.fourcc))" }.joined(separator: ", "))
            }
            format = named
        }
        guard let renderer = TestPatternRenderer(width: size.width, height: size.height, format: format) else {
            throw .unsupported(path, reason: "\(format) needs an even width and height, not \(size.width)x\(size.height)")
        }
        let frameDuration = SampleClock.frameDuration(framesPerSecond: rate)
        let pool = RecyclingBufferPool(bufferSize: renderer.frameSize, maximumCount: Self.poolLimit)
        let videoFormat = CaptureVideoFormat(
            layout: .raw(format, bytesPerRow: nil), width: size.width, height: size.height,
            frameDuration: MediaTime(value: frameDuration.numerator, timescale: Int32(clamping: frameDuration.denominator)),
            fourcc: VirtualPixelFormat.fourcc(for: format))
        settled.withLock { $0 = Settled(format: videoFormat, renderer: renderer, pool: pool, frameDuration: frameDuration) }
    }

    /// The frame size a request asks of a virtual camera.
    static func size(for request: CaptureVideoRequest, device: String) throws(CaptureError) -> (width: Int, height: Int) {
        var size = defaultSize
        if let preset = request.preset {
            size = preset.targetSize ?? largestSize
        }
        switch (request.width, request.height) {
        case (let width?, let height?): size = (width, height)
        case (nil, nil): break
        default: throw .unsupported(device, reason: "give both a width and a height, or neither")
        }
        guard (minimumSize.width...maximumSize.width).contains(size.width), (minimumSize.height...maximumSize.height).contains(size.height) else {
            throw .unsupported(device, reason: "a \(size.width)x\(size.height) frame is not possible; sizes run from "
                               + "\(minimumSize.width)x\(minimumSize.height) to \(maximumSize.width)x\(maximumSize.height)")
        }
        return size
    }

    func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let opened = settled.current
        guard let renderer = opened.renderer, let pool = opened.pool, let format = opened.format else {
            return .failed(.unsupported(path, reason: "the source is not open"))
        }
        let clock = SampleClock(start: Self.clockStart(opened.clockStart), numerator: opened.frameDuration.numerator,
                                denominator: opened.frameDuration.denominator)
        var index: Int64 = 0
        while !stop.isRaised {
            let stamp = clock.nanoseconds(at: index)
            var taken = pool.take()
            if taken == nil {
                if realtime {
                    // Every buffer is out: the frame is lost, as a camera loses it.
                    if stop.wait(untilNanoseconds: stamp) { break }
                    losses.record(1, atNanoseconds: stamp)
                    index += 1
                    continue
                }
                taken = pool.waitForBuffer(stop: stop)
            }
            guard let buffer = taken else { break }
            renderer.render(frame: index, into: buffer)
            if realtime, stop.wait(untilNanoseconds: stamp) {
                pool.recycle(buffer)
                break
            }
            deliver(.video(VideoSampleBuffer(
                storage: pool.lend(buffer, count: renderer.frameSize), layout: format.layout, width: format.width,
                height: format.height, presentationTime: MediaTime(value: stamp, timescale: MonotonicClock.timescale),
                duration: format.frameDuration, sequence: UInt64(index))))
            index += 1
        }
        return .stopped
    }

    /// Sample buffers made so far: stays small, however many samples were delivered.
    var allocatedBuffers: Int { settled.withLock { $0.pool }?.allocatedCount ?? 0 }

    func close() {
        settled.withLock { state in
            state.renderer = nil
            state.pool = nil
        }
    }
}

extension TestPatternSource: SessionClockedSource {
    func startClock(at nanoseconds: Int64) {
        settled.withLock { $0.clockStart = nanoseconds }
    }
}
