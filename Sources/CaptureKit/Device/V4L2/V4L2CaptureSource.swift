import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// A camera as a capture source: a V4L2 node streaming into memory-mapped
/// buffers. `open()` settles the format (VIDIOC_S_FMT, S_PARM) and maps the
/// buffers; `run(stop:deliver:)` lends each filled buffer out as a
/// `VideoSampleBuffer` and queues it again once the last reference to it goes.
///
/// Frames are stamped on CLOCK_MONOTONIC whatever clock the driver uses.
/// Frames the driver flags as broken (or empty) are skipped and counted;
/// `droppedByDevice` counts those and the frames missing from the driver's
/// sequence numbers.
final class V4L2CaptureSource: CaptureSource, Sendable {
    var mediaType: MediaType { .video }
    let path: String
    let localizedName: String
    let modelID: String?
    var uniqueID: String { device.uniqueID }
    /// What was asked for.
    let request: CaptureVideoRequest

    private let device: CaptureDevice
    private let state = Locked(State())
    /// How many buffers to ask the driver for: enough that frames held briefly
    /// by outputs do not starve the driver.
    static let bufferCount: UInt32 = 8

    private struct State {
        var choice: VideoFormatChoice?
        var format: CaptureVideoFormat?
        var queue: V4L2BufferQueue?
        var gaps = 0
        var skipped = 0
        var replacedStamps = 0
        var holdsRecordPriority = false
    }

    /// A source for `device`, which must be a V4L2 camera; nothing is opened yet.
    /// Raise the streaming handle to V4L2's record priority when opening,
    /// so no other program changes the camera while it captures (the
    /// driver's half of the configuration lock).
    var holdsRecordPriority: Bool {
        get { state.withLock { $0.holdsRecordPriority } }
        set { state.withLock { $0.holdsRecordPriority = newValue } }
    }

    init(device: CaptureDevice, request: CaptureVideoRequest = CaptureVideoRequest()) {
        self.device = device
        self.path = device.path
        self.localizedName = device.localizedName
        self.modelID = device.modelID
        self.request = request
    }

    deinit { close() }

    /// The format frames come in, once `open()` has returned.
    var videoFormat: CaptureVideoFormat? { state.withLock { $0.format } }
    var audioFormat: CaptureAudioFormat? { nil }
    /// The time per frame the driver settled on, once open; nil when it does not say.
    var frameDuration: MediaTime? { videoFormat?.frameDuration }
    /// The format, size and interval chosen from what the camera offers, once open.
    var formatChoice: VideoFormatChoice? { state.withLock { $0.choice } }

    /// The capturing handle, as a handle for the camera's controls, while
    /// open: with the record priority on it, the one handle the driver takes changes from.
    var captureControlNode: (any V4L2ControlNode)? { state.withLock { $0.queue?.node } as? any V4L2ControlNode }

    /// Frames lost by the device: sequence gaps plus skipped frames.
    var droppedByDevice: Int { state.withLock { $0.gaps + $0.skipped } }
    var lossLog: SampleLossLog? { losses }
    private let losses = SampleLossLog()
    /// Frames the driver returned flagged as erroneous or empty, and H.264/HEVC
    /// frames that depended on a lost one (up to the next keyframe): not delivered.
    var skippedFrames: Int { state.withLock { $0.skipped } }
    /// Frames whose driver timestamp could not be true and was replaced: implausible
    /// stamps by the time the frame was dequeued, stamps from before the stream
    /// started (a buffer another reader left) by the stream's start.
    var replacedTimestamps: Int { state.withLock { $0.replacedStamps } }

    // MARK: Opening

    func open() throws(CaptureError) {
        close()
        guard case .v4l2(let v4l2) = device.backend else {
            throw .device(.notACaptureDevice(path, reason: "not a video capture device (it is a microphone)"))
        }
        let formats: [VideoFormat]
        do {
            formats = try device.videoFormats(includingConversions: request.useLibv4l2)
        } catch {
            throw .device(error)
        }
        let choice = try VideoFormatSelection.choose(request, from: formats, device: path)

        let node: any V4L2StreamingNode
        do {
            node = try openStreamingNode(v4l2, path: path, options: V4L2OpenOptions(useLibv4l2: choice.throughLibv4l2))
        } catch {
            throw .device(DeviceError(opening: path, error, kind: "video device"))
        }
        if holdsRecordPriority {
            // VIDIOC_S_PRIORITY on the streaming handle itself: other
            // programs can no longer change the camera's format or controls.
            do {
                try node.setPriority(.record)
            } catch where error.errno == EBUSY {
                node.close()
                let holder = ConfigurationLock.currentHolder(of: path).map { " by \($0)" } ?? " by another process"
                throw .device(.busy(path, reason: "device is locked for configuration\(holder)"))
            } catch where error.errno == ENOTTY || error.errno == EINVAL {
                // The driver has no priorities; the advisory lock is all there is.
            } catch {
                node.close()
                throw .io(path, error)
            }
        }
        let format: CaptureVideoFormat
        let queue: V4L2BufferQueue
        do {
            format = try configure(node, choice)
        } catch {
            node.close()
            throw error
        }
        do {
            queue = try V4L2BufferQueue(node: node, count: Self.bufferCount)
        } catch {
            node.close()
            throw setupError(error)
        }
        state.withLock { state in
            state = State(choice: choice, format: format, queue: queue, holdsRecordPriority: state.holdsRecordPriority)
        }
    }

    /// S_FMT and S_PARM for the choice, then G_FMT for what the driver really set.
    private func configure(_ node: any V4L2StreamingNode, _ choice: VideoFormatChoice) throws(CaptureError) -> CaptureVideoFormat {
        let capability: V4L2Capability
        do {
            capability = try node.queryCapability()
        } catch {
            throw .device(DeviceError(opening: path, error, kind: "video device"))
        }
        let caps = capability.nodeCapabilities
        if caps & V4L2Capability.videoCapture == 0 {
            let reason = caps & V4L2Capability.videoCaptureMultiplanar != 0
                ? "multi-planar capture is not supported" : "not a video capture device"
            throw .unsupported(path, reason: reason)
        }
        if !node.throughLibv4l2, caps & V4L2Capability.streaming == 0 {
            throw .unsupported(path, reason: "the driver does not stream into buffers (no V4L2_CAP_STREAMING); try libv4l2")
        }

        do {
            _ = try node.setCaptureFormat(V4L2CaptureFormat(pixelFormat: choice.captureFourCC.code,
                                                            width: choice.size.width, height: choice.size.height))
        } catch {
            throw setupError(error)
        }

        var frameDuration: MediaTime?
        if let interval = choice.frameInterval {
            frameDuration = try setInterval(node, interval)
        }

        let set: V4L2CaptureFormat
        do {
            set = try node.captureFormat()
        } catch {
            throw setupError(error)
        }
        let fourcc = FourCC(code: set.pixelFormat)
        guard fourcc == choice.captureFourCC, set.width == choice.size.width, set.height == choice.size.height else {
            throw .unsupported(path, reason: "the driver set \(set.width)x\(set.height) \(fourcc) when asked for \(choice.size) \(choice.captureFourCC)")
        }
        return CaptureVideoFormat(layout: try layout(of: fourcc, width: Int(set.width), bytesPerLine: Int(set.bytesPerLine)),
                                  width: Int(set.width), height: Int(set.height), frameDuration: frameDuration,
                                  fourcc: fourcc.description)
    }

    /// VIDIOC_S_PARM; the interval the driver really set, or nil when it does
    /// not take one (it then runs at its own rate).
    private func setInterval(_ node: any V4L2StreamingNode, _ interval: Fraction) throws(CaptureError) -> MediaTime? {
        let set: Fraction?
        do {
            set = try node.setFrameInterval(interval)
        } catch where error.errno == ENOTTY || error.errno == EINVAL {
            return nil
        } catch {
            throw setupError(error)
        }
        guard let set else { return nil }
        if let asked = request.framesPerSecond, abs(set.framesPerSecond - asked) > asked * VideoFormatSelection.rateTolerance {
            throw .unsupported(path, reason: "the driver set \(VideoFormatSelection.rate(set.framesPerSecond)) fps when asked for \(VideoFormatSelection.rate(asked)) fps")
        }
        return set.mediaTime
    }

    private func layout(of fourcc: FourCC, width: Int, bytesPerLine: Int) throws(CaptureError) -> VideoSampleLayout {
        if let codec = V4L2PixelMapping.codecName(for: fourcc) { return .compressed(codecName: codec) }
        guard let pixelFormat = V4L2PixelMapping.pixelFormat(for: fourcc) else {
            throw .unsupported(path, reason: "pixel format \(fourcc) cannot be read (FFmpeg has no equivalent)")
        }
        // Rows padded beyond their packed width are reported; packed ones are nil.
        let packed = Int(av_image_get_linesize(pixelFormat.raw, Int32(width), 0))
        return .raw(pixelFormat, bytesPerRow: bytesPerLine > 0 && bytesPerLine != packed ? bytesPerLine : nil)
    }

    /// The error for a failed format or buffer request.
    private func setupError(_ error: SystemCallError) -> CaptureError {
        switch error.errno {
        case EBUSY: return .device(.busy(path, reason: "device is busy: another process is capturing from it"))
        case ENODEV, ENXIO: return .deviceLost(path)
        default: return .io(path, error)
        }
    }

    /// VIDIOC_STREAMON now, so that a camera the bus cannot carry beside
    /// the others (ENOSPC: a USB controller's bandwidth is reserved per
    /// stream when it starts) is refused before anything is recorded.
    /// Frames the driver fills meanwhile wait in its queue for `run`.
    func startStreaming() throws(CaptureError) {
        guard let queue = state.withLock({ $0.queue }), !queue.isStreaming else { return }
        do {
            try queue.start()
        } catch {
            queue.stop()
            switch error.errno {
            case ENOSPC: throw .noBandwidth(path)
            case ENODEV, ENXIO: throw .deviceLost(path)
            default: throw setupError(error)
            }
        }
    }

    // MARK: Capture loop

    func run(stop: CaptureStopSignal, deliver: (SampleBuffer) -> Void) -> CaptureEnd {
        let opened = state.withLock { state in (state.queue, state.format) }
        guard let queue = opened.0, let format = opened.1 else {
            return .failed(.source(path, reason: "the device is not open"))
        }
        do {
            if !queue.isStreaming { try queue.start() }
        } catch where error.errno == ENOSPC {
            return .failed(.noBandwidth(path))
        } catch {
            return end(after: error, queue: queue)
        }
        defer { queue.stop() }

        var clock = V4L2TimestampClock()
        // Stamps from before STREAMON are leftovers (V4L2TimestampClock); a frame
        // being exposed as streaming began may be stamped up to an interval earlier.
        let streamStart = queue.streamingSince
        var sequences = SequenceGapCounter()
        // H.264/HEVC: keyframes and parameter sets are read from the
        // bitstream (drivers do not all flag keyframes); other compressed
        // codecs with inter frames go by the driver's flags.
        var parameterSets: InBandParameterSets?
        var keyframesFlagged = false
        var copiesFrames = false
        if case .compressed(let codec) = format.layout {
            copiesFrames = true
            parameterSets = AccessUnit.Codec(codecName: codec).map(InBandParameterSets.init)
            keyframesFlagged = parameterSets == nil && codec != "mjpeg"
        }
        // After a frame the device lost (or flagged broken), the H.264/HEVC
        // frames up to the next keyframe refer to a picture nobody has:
        // they are dropped with it rather than delivered undecodable.
        var chainBroken = false
        // How far apart frames come, to place the frames a gap lost before the frame after it.
        let frameInterval = format.frameDuration.flatMap { $0.isNumeric ? $0.converted(toTimescale: MonotonicClock.timescale).value : nil }
            ?? 1_000_000_000 / 30
        // Beyond the interval: the scheduling slack between a driver's stamp and our clock reading.
        let staleTolerance: Int64 = 10_000_000

        while true {
            if stop.isRaised || queue.isClosed { return .stopped }
            // With every buffer lent out there is nothing for the driver to
            // fill; wait briefly for one to come back instead of polling the node.
            let waitOnDevice = queue.queuedCount > 0
            // None queued because the driver refused them back: nothing
            // will ever arrive, so end the way that refusal says.
            if !waitOnDevice, let failure = queue.requeueFailure { return end(after: failure, queue: queue) }
            var entries = [pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)]
            if waitOnDevice {
                let target = queue.node.bufferPollTarget
                entries.append(pollfd(fd: target.descriptor, events: target.events, revents: 0))
            }
            do {
                try Posix.poll(&entries, timeout: waitOnDevice ? 1000 : 5)
            } catch {
                return .failed(.io(path, error))
            }
            if entries[0].revents != 0 || stop.isRaised { return .stopped }
            guard waitOnDevice, entries[1].revents != 0 else { continue }
            let revents = Int32(entries[1].revents)
            if revents & Int32(POLLNVAL) != 0 {
                return .failed(.io(path, SystemCallError(call: "poll", errno: EBADF)))
            }

            var dequeuedAny = false
            while true {
                let buffer: V4L2DequeuedBuffer
                do {
                    guard let next = try queue.dequeue() else { break }
                    buffer = next
                } catch {
                    return end(after: error, queue: queue)
                }
                dequeuedAny = true
                let lost = sequences.record(buffer.sequence)
                if buffer.wasNotQueued {
                    // Refilled while an output held it: nothing in it can be trusted.
                    state.withLock { $0.gaps += lost; $0.skipped += 1 }
                    losses.record(lost + 1, atNanoseconds: MonotonicClock.nowNanoseconds())
                    chainBroken = true
                    continue
                }
                if buffer.flags & V4L2BufferFlags.error != 0 || buffer.bytesUsed == 0 {
                    state.withLock { $0.gaps += lost; $0.skipped += 1 }
                    losses.record(lost + 1, atNanoseconds: MonotonicClock.nowNanoseconds())
                    queue.giveBack(buffer.index)
                    chainBroken = true
                    continue
                }
                if lost > 0 { chainBroken = true }
                let now = MonotonicClock.nowNanoseconds()
                let stamp = clock.monotonicTime(flags: buffer.flags, timestamp: buffer.timestamp,
                                                monotonicNow: now, realtimeNow: MonotonicClock.realtimeNanoseconds(),
                                                streamStart: streamStart, tolerance: frameInterval + staleTolerance)
                let replaced = clock.replacedStamps
                state.withLock { $0.gaps += lost; $0.replacedStamps = replaced }
                // The lost frames came before this one, a frame interval apart.
                losses.record(lost, atNanoseconds: stamp - Int64(lost) * frameInterval)
                // Compressed frames are small: copied, their buffer goes straight back.
                var storage = queue.take(buffer, copying: copiesFrames)
                var keyframe = keyframesFlagged ? V4L2BufferFlags.isKeyframe(buffer.flags) : true
                if parameterSets != nil {
                    // Parameter sets alone are no frame: they go in front of the
                    // next keyframe (a copy, once per keyframe that lacks them).
                    guard let unit = parameterSets!.deliverable(storage) else { continue }
                    (storage, keyframe) = unit
                    if chainBroken {
                        guard keyframe else {
                            state.withLock { $0.skipped += 1 }
                            losses.record(1, atNanoseconds: stamp)
                            continue
                        }
                        chainBroken = false
                    }
                }
                let sample = VideoSampleBuffer(
                    storage: storage, layout: format.layout, width: format.width, height: format.height,
                    presentationTime: MediaTime(value: stamp, timescale: MonotonicClock.timescale),
                    duration: format.frameDuration, sequence: sequences.extended, isKeyframe: keyframe)
                deliver(.video(sample))
            }
            // POLLERR with nothing to dequeue: the queue is in error (a
            // disconnect, a fatal driver error); find out which.
            if !dequeuedAny, revents & Int32(POLLERR | POLLHUP) != 0 {
                return end(after: SystemCallError(call: "poll", errno: EIO), queue: queue)
            }
        }
    }

    /// How a failed streaming call ends the loop: a device that went away is
    /// lost; anything else is a failure naming the call.
    private func end(after error: SystemCallError, queue: V4L2BufferQueue) -> CaptureEnd {
        switch error.errno {
        case ENODEV, ENXIO:
            return .deviceLost(path)
        case EIO where isGone(queue.node):
            return .deviceLost(path)
        case EPIPE:
            return .endOfInput
        case EBADF where queue.isClosed:
            return .stopped
        case EBUSY:
            return .failed(.device(.busy(path, reason: "device is busy: another process is capturing from it")))
        default:
            return .failed(.io(path, error))
        }
    }

    /// Whether the node is gone: removed, or refusing even VIDIOC_QUERYCAP
    /// (a driver that unregistered it answers ENODEV).
    private func isGone(_ node: any V4L2StreamingNode) -> Bool {
        if !node.nodeExists { return true }
        do {
            _ = try node.queryCapability()
            return false
        } catch {
            return error.errno == ENODEV || error.errno == ENXIO || error.errno == EIO
        }
    }

    /// Stops streaming and releases the device. Frames still held elsewhere
    /// stay readable; their buffers are simply not queued again.
    func close() {
        let queue = state.withLock { state -> V4L2BufferQueue? in
            defer { state.queue = nil }
            return state.queue
        }
        queue?.close()
    }
}

/// The `v4l2_buffer.flags` bits the capture loop reads.
enum V4L2BufferFlags {
    static let keyframe: UInt32 = 0x0000_0008
    static let predictedFrame: UInt32 = 0x0000_0010
    static let bidirectionalFrame: UInt32 = 0x0000_0020
    static let error: UInt32 = 0x0000_0040

    /// Whether a compressed frame of a codec with inter frames (H.264,
    /// HEVC …) decodes on its own, as the driver flags it.
    static func isKeyframe(_ flags: UInt32) -> Bool {
        flags & keyframe != 0
    }
}
