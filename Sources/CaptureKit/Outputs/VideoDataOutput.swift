import CFFmpeg
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Hears the frames of a `VideoDataOutput`, like
/// AVCaptureVideoDataOutputSampleBufferDelegate. Calls come on the queue
/// given to `setSampleBufferDelegate(_:queue:)` (or the output's own thread
/// when none is), one at a time, in capture order, and never after
/// `CaptureSession.stopRunning()` has returned. As in AVFoundation, the
/// protocol does not require `Sendable`.
public protocol VideoDataOutputSampleBufferDelegate: AnyObject {
    /// One frame: in the output's `videoSettings` format and size when it
    /// has them (see `sample.imageBuffer`), else as the camera delivered it
    /// (raw or compressed, see its `layout`). Holding it past the call keeps
    /// a capture buffer from the device: copy what is needed instead.
    func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from input: CaptureInput)
    /// Frames were let go because the delegate was still busy with an
    /// earlier one; `total` is how many since the output began.
    func videoDataOutput(_ output: VideoDataOutput, didDropFrames total: Int)
}

extension VideoDataOutputSampleBufferDelegate {
    public func videoDataOutput(_ output: VideoDataOutput, didDropFrames total: Int) {}
}

/// Hands a session's video frames to a delegate, like
/// AVCaptureVideoDataOutput: for analysis (a motion detector) rather
/// than recording. Capture never waits on the delegate: frames wait in a
/// short queue (one frame when `alwaysDiscardsLateVideoFrames`), and those
/// that find it full are dropped and counted. Frames are converted to
/// `videoSettings` on the output's own thread, never on the capture thread.
/// Where AVFoundation needs a callback queue, this output also calls its
/// delegate on that thread of its own when it is given none. A disabled
/// connection stops its frames. Unlike AVFoundation, the connection's
/// `videoRotationAngle` and `isVideoMirrored` do not turn the buffers
/// handed over: they are written as a recorded track's display matrix.
public final class VideoDataOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: the delegate, its queue, the settings, the delivery and the thread are guarded by `state`;
    // the delivery guards its own state.

    /// The pixel format and size frames are handed over in, as
    /// AVCaptureVideoDataOutput's `videoSettings` (kCVPixelBufferPixelFormatTypeKey,
    /// kCVPixelBufferWidthKey, kCVPixelBufferHeightKey). A nil width or
    /// height keeps the camera's size.
    public struct Settings: Sendable, Hashable {
        public var pixelFormat: PixelFormat
        public var width: Int?
        public var height: Int?

        public init(pixelFormat: PixelFormat, width: Int? = nil, height: Int? = nil) {
            self.pixelFormat = pixelFormat
            self.width = width
            self.height = height
        }
    }

    private struct State {
        weak var delegate: (any VideoDataOutputSampleBufferDelegate)?
        var callbackQueue: DispatchQueue?
        var settings: Settings?
        var delivery: VideoDataDelivery?
        var thread: CaptureThread?
        var droppedBefore = 0
        var reportedDrops = 0
        var failedConversions = 0
    }

    private let state = Locked(State())

    /// Whether only one frame waits for a busy delegate (true, as in
    /// AVFoundation; frames that come while it waits are dropped) or up to eight.
    public let alwaysDiscardsLateVideoFrames: Bool

    public init(alwaysDiscardsLateVideoFrames: Bool = true) {
        self.alwaysDiscardsLateVideoFrames = alwaysDiscardsLateVideoFrames
        super.init()
    }

    /// Sets the delegate (held weakly) that hears the frames, and the queue
    /// its calls are made on, as AVCaptureVideoDataOutput's method: calls
    /// come one at a time, in capture order, on `queue` (a serial queue, as
    /// AVFoundation asks), or on the output's own thread when it is nil:
    /// unlike AVFoundation, which refuses a delegate without a queue, a
    /// nil queue is allowed and costs no dispatch per frame.
    /// While a call runs, newer frames are dropped (see `alwaysDiscardsLateVideoFrames`).
    public func setSampleBufferDelegate(_ delegate: (any VideoDataOutputSampleBufferDelegate)?, queue: DispatchQueue? = nil) {
        state.withLock {
            $0.delegate = delegate
            $0.callbackQueue = delegate == nil ? nil : queue
        }
    }

    /// The delegate, if it is still alive.
    public var sampleBufferDelegate: (any VideoDataOutputSampleBufferDelegate)? { state.withLock { $0.delegate } }
    /// The queue the delegate is called on; nil: the output's own thread.
    public var sampleBufferCallbackQueue: DispatchQueue? { state.withLock { $0.callbackQueue } }

    /// The format and size frames are handed over in; nil (the default):
    /// as the camera gives them. Compressed frames (MJPEG, H.264) are
    /// decoded first. May be changed while the session runs: it applies
    /// from the next frame. Settings it cannot produce (a pixel format not
    /// in `availableVideoPixelFormatTypes`, a side outside 1…16384) are
    /// ignored and the settings before stay, where AVFoundation raises an
    /// exception; `canUseVideoSettings(_:)` says so beforehand.
    public var videoSettings: Settings? {
        get { state.withLock { $0.settings } }
        set {
            guard newValue.map(canUseVideoSettings) ?? true else { return }
            state.withLock { $0.settings = newValue }
        }
    }

    /// Whether `settings` can be produced: a pixel format in
    /// `availableVideoPixelFormatTypes` and sides from 1 to 16384.
    public func canUseVideoSettings(_ settings: Settings) -> Bool {
        let sides = [settings.width, settings.height].compactMap { $0 }
        return availableVideoPixelFormatTypes.contains(settings.pixelFormat) && sides.allSatisfy { (1...16384).contains($0) }
    }

    /// The pixel formats `videoSettings` may ask for, the most useful first.
    public var availableVideoPixelFormatTypes: [PixelFormat] {
        let formats: [PixelFormat] = [.bgra, .rgba, .nv12, .yuv420p, .yuyv422, .uyvy422, .rgb24, .bgr24, .gray8, .yuv422p, .yuv444p]
        return formats.filter { $0.isConvertible(asInput: false) }
    }

    /// Frames dropped because the delegate was busy, since the output was made.
    public var droppedFrameCount: Int {
        state.withLock { $0.droppedBefore + ($0.delivery?.queue.refusedCount ?? 0) }
    }

    /// Frames that could not be decoded or converted to `videoSettings`
    /// (and so never reached the delegate), since the output was made.
    public var failedConversionCount: Int { state.withLock { $0.failedConversions } }

    // MARK: CaptureOutput

    public override func sessionWillStartRunning(inputs: [CaptureInput]) throws(CaptureError) {
        let delivery = VideoDataDelivery(capacity: alwaysDiscardsLateVideoFrames ? 1 : 8)
        let started = state.withLock { state -> Bool in
            guard state.delivery == nil else { return false }
            state.delivery = delivery
            return true
        }
        guard started else { return }
        do {
            let thread = try CaptureThread.start(name: "video-data") { [weak self] in self?.deliver(delivery) }
            state.withLock { $0.thread = thread }
        } catch {
            state.withLock { $0.delivery = nil }
            throw .io("video data output", error)
        }
    }

    public override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard case .video(let video) = sample, let delivery = state.withLock({ $0.delivery }), isConnectionEnabled(for: input) else { return }
        delivery.queue.put((video, input))
    }

    /// Ends delivery: no delegate call begins after this returns, and one
    /// under way on another thread is waited for. Called from inside a
    /// delegate call (a delegate that stops the session), it does not wait
    /// for that call, and nothing follows it.
    public override func sessionDidStopRunning() {
        let (delivery, thread) = state.withLock { state in
            defer {
                state.droppedBefore += state.delivery?.queue.refusedCount ?? 0
                state.delivery = nil
                state.thread = nil
            }
            return (state.delivery, state.thread)
        }
        delivery?.stop()
        // The thread waits for no delegate call once stopped; from its own
        // thread (stopped inside a call without a queue) this detaches it.
        thread?.join()
    }

    // MARK: The output's thread

    private func deliver(_ delivery: VideoDataDelivery) {
        let converter = VideoDataConverter()
        while let (sample, input) = delivery.queue.take() {
            if delivery.isStopped { break }
            let settings = state.withLock { $0.settings }
            var converted: [VideoSampleBuffer] = []
            do throws(WriterError) {
                converted = try converter.convert(sample, to: settings)
            } catch {
                state.withLock { $0.failedConversions += 1 }
                continue
            }
            for frame in converted {
                let (hasDelegate, queue, drops) = state.withLock { state -> (Bool, DispatchQueue?, Int?) in
                    let total = state.droppedBefore + delivery.queue.refusedCount
                    defer { state.reportedDrops = total }
                    return (state.delegate != nil, state.callbackQueue, total > state.reportedDrops ? total : nil)
                }
                guard hasDelegate else { continue }
                // The delegate is looked up where it is called (on its queue): it is
                // not Sendable, and one set to nil meanwhile hears nothing more.
                let call: @Sendable () -> Void = { [self] in
                    guard let delegate = sampleBufferDelegate else { return }
                    if let drops { delegate.videoDataOutput(self, didDropFrames: drops) }
                    delegate.videoDataOutput(self, didOutput: frame, from: input)
                }
                if let queue {
                    delivery.call(on: queue, call)
                } else {
                    delivery.call(call)
                }
                if delivery.isStopped { return }
            }
        }
    }
}

/// One running of a video data output: the frames waiting for the
/// delegate, and whether calls may still begin. `stop()` closes it: no
/// call begins after it returns, and a call under way on another thread is
/// waited for (not one on the stopping thread itself: a delegate that stops
/// the session from its callback).
final class VideoDataDelivery: Sendable {
    let queue: BoundedQueue<(VideoSampleBuffer, CaptureInput)>
    /// Whether calls may begin and which is under way; its condition wakes a thread waiting for a call to end.
    private struct Calls {
        var stopped = false
        var calling = false
        var callingThread = pthread_t()
        /// A call handed to the delegate's queue has not ended yet.
        var pending = false
    }
    private let lock = Locked(Calls())

    init(capacity: Int) {
        queue = BoundedQueue(capacity: capacity)
    }

    var isStopped: Bool { lock.withLock { $0.stopped } }

    /// Runs `body` here, unless stopped.
    func call(_ body: () -> Void) {
        let begins = lock.withLock { calls -> Bool in
            guard !calls.stopped else { return false }
            calls.calling = true
            calls.callingThread = pthread_self()
            return true
        }
        guard begins else { return }
        body()
        lock.withLock { calls in
            calls.calling = false
            lock.broadcast()
        }
    }

    /// Runs `body` on `queue`, unless stopped by then, and waits until it
    /// has run or the delivery is stopped: the output's thread takes no
    /// frame meanwhile, so that late frames are dropped while the delegate
    /// is busy. (Not `queue.sync`: a stop made on that queue outside a call
    /// would wait for this thread, which would wait for the queue.)
    func call(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        lock.withLock { $0.pending = true }
        queue.async { [self] in
            call(body)
            lock.withLock { calls in
                calls.pending = false
                lock.broadcast()
            }
        }
        lock.withLock(waitingWhile: { $0.pending && !$0.stopped }) { _, _ in }
    }

    func stop() {
        lock.withLock { calls in
            calls.stopped = true
            lock.broadcast()
        }
        // No call begins once stopped; one under way on another thread is waited for.
        lock.withLock(waitingWhile: { $0.calling && pthread_equal($0.callingThread, pthread_self()) == 0 }) { _, _ in }
        queue.close()
    }
}

/// Turns frames into the output's `videoSettings` on the output's thread:
/// compressed frames decoded, then converted with libswscale. Owned by that thread.
final class VideoDataConverter {
    private var decoder: CompressedFrameDecoder?
    private var decoderCodec: String?
    private var converter: PixelConverter?
    private let frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()

    deinit {
        var pointer = frame
        av_frame_free(&pointer)
    }

    /// The frames to hand on for `sample`: itself when there are no
    /// settings or it already matches them; else its picture converted
    /// (none while a decoder waits for a keyframe, or holds a frame back).
    func convert(_ sample: VideoSampleBuffer, to settings: Settings?) throws(WriterError) -> [VideoSampleBuffer] {
        guard let settings else { return [sample] }
        switch sample.layout {
        case .raw(let format, let bytesPerRow):
            let width = settings.width ?? sample.width, height = settings.height ?? sample.height
            if format == settings.pixelFormat, width == sample.width, height == sample.height { return [sample] }
            guard let frame else { throw .ffmpeg(FFmpegError(call: "av_frame_alloc", code: cffmpeg_averror(ENOMEM))) }
            return try PixelPlanes.withFrame(frame, over: sample.bytes, format: format, width: sample.width, height: sample.height,
                                             bytesPerRow: bytesPerRow) { frame throws(WriterError) in
                [try converted(frame, like: sample, time: sample.presentationTime, settings: settings)]
            }
        case .compressed(let codecName):
            if decoderCodec != codecName {
                decoder = try CompressedFrameDecoder(codecName: codecName)
                decoderCodec = codecName
            }
            guard let decoder, decoder.canStart(at: sample.isKeyframe) else { return [] }
            var frames: [VideoSampleBuffer] = []
            try decoder.decode(sample.bytes, time: sample.presentationTime) { picture, time throws(WriterError) in
                frames.append(try converted(picture, like: sample, time: time, settings: settings))
            }
            return frames
        }
    }

    typealias Settings = VideoDataOutput.Settings

    private func converted(_ source: UnsafeMutablePointer<AVFrame>, like sample: VideoSampleBuffer, time: MediaTime,
                           settings: Settings) throws(WriterError) -> VideoSampleBuffer {
        let width = settings.width ?? Int(source.pointee.width), height = settings.height ?? Int(source.pointee.height)
        if converter?.pixelFormat != settings.pixelFormat || converter?.width != width || converter?.height != height {
            converter = try PixelConverter(pixelFormat: settings.pixelFormat, width: width, height: height)
        }
        let picture = try converter!.convert(frame: source)
        let storage: SampleStorage
        let bytesPerRow: Int?
        if picture.planeCount == 1 {
            // The converted picture's own memory, lent for as long as the sample lives.
            let stride = picture.bytesPerRow(plane: 0)
            let base = picture.withPlaneArrays { data, _ in UnsafeRawPointer(data[0]) }
            storage = SampleStorage(lending: UnsafeRawBufferPointer(start: base, count: stride * height)) { withExtendedLifetime(picture) {} }
            bytesPerRow = stride
        } else {
            // Several planes: packed one after another, as a sample's layout has them.
            guard let size = settings.pixelFormat.imageSize(width: width, height: height) else {
                throw .invalidSettings("\(settings.pixelFormat) cannot hold a \(width)x\(height) image")
            }
            let copied = SampleStorage(count: size) { memory in
                _ = withUnsafePointer(to: &picture.frame.pointee.data) { data in
                    withUnsafePointer(to: &picture.frame.pointee.linesize) { lines in
                        data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { data in
                            lines.withMemoryRebound(to: Int32.self, capacity: 8) { lines in
                                av_image_copy_to_buffer(memory.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(size), data, lines,
                                                        settings.pixelFormat.raw, Int32(width), Int32(height), 1)
                            }
                        }
                    }
                }
            }
            storage = copied
            bytesPerRow = nil
        }
        return VideoSampleBuffer(storage: storage, layout: .raw(settings.pixelFormat, bytesPerRow: bytesPerRow), width: width, height: height,
                                 presentationTime: time, duration: sample.duration, sequence: sample.sequence)
    }
}
