/// Hears the frames of a `VideoDataOutput`, like
/// AVCaptureVideoDataOutputSampleBufferDelegate. Calls come on the
/// output's own thread, one at a time, in capture order.
public protocol VideoDataOutputSampleBufferDelegate: AnyObject, Sendable {
    /// One frame as the camera delivered it (raw or compressed, see its
    /// `layout`). Holding it past the call keeps a capture buffer from the
    /// device: copy what is needed instead.
    func videoDataOutput(_ output: VideoDataOutput, didOutput sample: VideoSampleBuffer, from input: CaptureInput)
    /// Frames were let go because the delegate was still busy with an
    /// earlier one; `total` is how many since the output began.
    func videoDataOutput(_ output: VideoDataOutput, didDropFrames total: Int)
}

extension VideoDataOutputSampleBufferDelegate {
    public func videoDataOutput(_ output: VideoDataOutput, didDropFrames total: Int) {}
}

/// Hands a session's video frames to a delegate on a thread of its own,
/// like AVCaptureVideoDataOutput: for analysis (a motion detector) rather
/// than recording. Capture never waits on the delegate: frames wait in a
/// short queue (one frame when `alwaysDiscardsLateVideoFrames`), and those
/// that find it full are dropped and counted.
public final class VideoDataOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: the delegate, the queue and the thread are guarded by `state`; the queue is thread-safe itself.
    private struct State {
        weak var delegate: (any VideoDataOutputSampleBufferDelegate)?
        var queue: BoundedQueue<(VideoSampleBuffer, CaptureInput)>?
        var thread: CaptureThread?
        var droppedBefore = 0
        var reportedDrops = 0
    }

    private let state = Locked(State())

    /// Whether only one frame waits for a busy delegate (true, as in
    /// AVFoundation; frames that come while it waits are dropped) or up to eight.
    public let alwaysDiscardsLateVideoFrames: Bool

    public init(alwaysDiscardsLateVideoFrames: Bool = true) {
        self.alwaysDiscardsLateVideoFrames = alwaysDiscardsLateVideoFrames
        super.init()
    }

    /// Sets the delegate (held weakly) that hears the frames.
    public func setSampleBufferDelegate(_ delegate: (any VideoDataOutputSampleBufferDelegate)?) {
        state.withLock { $0.delegate = delegate }
    }

    /// Frames dropped because the delegate was busy, since the output was made.
    public var droppedFrameCount: Int {
        state.withLock { $0.droppedBefore + ($0.queue?.refusedCount ?? 0) }
    }

    // MARK: CaptureOutput

    public override func sessionWillStartRunning(inputs: [CaptureInput]) throws(CaptureError) {
        let queue = BoundedQueue<(VideoSampleBuffer, CaptureInput)>(capacity: alwaysDiscardsLateVideoFrames ? 1 : 8)
        let started = state.withLock { state -> Bool in
            guard state.queue == nil else { return false }
            state.queue = queue
            return true
        }
        guard started else { return }
        let thread = CaptureThread(name: "video-data") { [weak self] in self?.deliver(from: queue) }
        state.withLock { $0.thread = thread }
    }

    public override func capture(_ sample: SampleBuffer, from input: CaptureInput) {
        guard case .video(let video) = sample, let queue = state.withLock({ $0.queue }) else { return }
        queue.put((video, input))
    }

    public override func sessionDidStopRunning() {
        let (queue, thread) = state.withLock { state in
            defer {
                state.droppedBefore += state.queue?.refusedCount ?? 0
                state.queue = nil
                state.thread = nil
            }
            return (state.queue, state.thread)
        }
        queue?.close()
        thread?.join()
    }

    // MARK: The output's thread

    private func deliver(from queue: BoundedQueue<(VideoSampleBuffer, CaptureInput)>) {
        while let (sample, input) = queue.take() {
            let (delegate, drops) = state.withLock { state -> ((any VideoDataOutputSampleBufferDelegate)?, Int?) in
                let total = state.droppedBefore + queue.refusedCount
                defer { state.reportedDrops = total }
                return (state.delegate, total > state.reportedDrops ? total : nil)
            }
            if let drops { delegate?.videoDataOutput(self, didDropFrames: drops) }
            delegate?.videoDataOutput(self, didOutput: sample, from: input)
        }
    }
}
