import Synchronization

/// One viewer of a live view (`LiveViewOutput.view(of:settings:)`): it takes
/// the view's pictures one at a time with `next()`. A viewer that is slow to
/// take them misses some (`droppedFrameCount`): it holds only the newest,
/// so it never holds back the camera, recordings or the other viewers.
/// `close()` ends its watching (the view holds its viewers until then).
///
/// A sender that writes without a task of its own (an event loop) has the
/// pictures handed to it instead, with `deliver(to:)`.
package final class LiveViewer: Sendable {
    /// Takes a picture on the view's thread, without blocking; answers false
    /// when it could not (its connection is full), which counts as dropped.
    package typealias Sink = @Sendable (LiveViewFrame) -> Bool

    /// What became of a picture offered to a viewer.
    enum Offer {
        /// Taken by the sink; the caller counts it in the view's totals.
        case delivered
        /// Taken by a waiting `next()`, and counted in the view's totals
        /// before it returned (whoever reads them then sees it).
        case taken
        /// Kept for the next `next()`.
        case kept
        /// Kept in place of an unread one, or refused by the sink: one dropped.
        case dropped
        /// The viewer has ended.
        case ignored
    }

    private struct Mailbox {
        var pending: LiveViewFrame?
        var waiter: CheckedContinuation<LiveViewFrame?, Never>?
        var sink: Sink?
        var endWaiters: [CheckedContinuation<Void, Never>] = []
        var closed = false
        var delivered = 0
        var bytes = 0
        var dropped = 0
    }
    private let mailbox = Mutex(Mailbox())
    /// The view it watches; told when the viewer leaves.
    private let view: LiveView

    /// The size and rate of its pictures.
    package let width: Int
    package let height: Int
    package let frameRate: Double?

    init(view: LiveView) {
        self.view = view
        width = view.width
        height = view.height
        frameRate = view.frameRate
    }

    /// The next picture: the newest the view made since the last one was
    /// taken, waiting for it if there is none yet; nil once the viewer is
    /// closed, the session stops, or the calling task is cancelled.
    package func next() async -> LiveViewFrame? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<LiveViewFrame?, Never>) in
                let ready = mailbox.withLock { box -> LiveViewFrame?? in
                    if let frame = box.pending {
                        box.pending = nil
                        box.delivered += 1
                        box.bytes += frame.jpeg.count
                        return .some(frame)
                    }
                    if box.closed || box.sink != nil || Task.isCancelled { return .some(nil) }
                    box.waiter = continuation
                    return nil
                }
                if let ready {
                    if let frame = ready { view.countDelivered(frame) }
                    continuation.resume(returning: ready)
                }
            }
        } onCancel: {
            mailbox.withLock { box in
                defer { box.waiter = nil }
                return box.waiter
            }?.resume(returning: nil)
        }
    }

    /// Pictures taken with `next()`, and their bytes.
    package var deliveredFrameCount: Int { mailbox.withLock { $0.delivered } }
    package var deliveredByteCount: Int { mailbox.withLock { $0.bytes } }
    /// Pictures replaced by a newer one before this viewer took them.
    package var droppedFrameCount: Int { mailbox.withLock { $0.dropped } }

    /// Stops watching: `next()` answers nil from now on, and the view stops
    /// encoding once its last viewer has gone.
    package func close() {
        finish()
        view.remove(self)
    }

    /// Hands every picture from now on to `sink`, on the view's thread as
    /// it is made (the one waiting, at once), instead of keeping it for
    /// `next()`, which answers nil from now on.
    package func deliver(to sink: @escaping Sink) {
        let pending = mailbox.withLock { box -> LiveViewFrame? in
            guard !box.closed else { return nil }
            box.sink = sink
            defer { box.pending = nil }
            return box.pending
        }
        guard let pending else { return }
        let taken = sink(pending)
        count(pending, taken ? .delivered : .dropped)
        if taken { view.countDelivered(pending) } else { view.countDropped(1) }
    }

    /// Returns once the viewer is closed, or its view has ended.
    package func ended() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = mailbox.withLock { box -> Bool in
                if !box.closed { box.endWaiters.append(continuation) }
                return box.closed
            }
            if ended { continuation.resume() }
        }
    }

    /// A new picture from the view (on its thread): handed to a waiting
    /// `next()` or the sink, or kept for the next `next()`.
    func offer(_ frame: LiveViewFrame) -> Offer {
        enum Step { case resume(CheckedContinuation<LiveViewFrame?, Never>), sink(Sink), done(Offer) }
        let step = mailbox.withLock { box -> Step in
            guard !box.closed else { return .done(.ignored) }
            if let sink = box.sink { return .sink(sink) }
            if let waiter = box.waiter {
                box.waiter = nil
                box.delivered += 1
                box.bytes += frame.jpeg.count
                return .resume(waiter)
            }
            let dropped = box.pending != nil
            if dropped { box.dropped += 1 }
            box.pending = frame
            return .done(dropped ? .dropped : .kept)
        }
        switch step {
        case .resume(let waiter):
            view.countDelivered(frame)
            waiter.resume(returning: frame)
            return .taken
        case .sink(let sink):
            // Outside the lock: the sink writes to a connection.
            let outcome: Offer = sink(frame) ? .delivered : .dropped
            count(frame, outcome)
            return outcome
        case .done(let outcome):
            return outcome
        }
    }

    private func count(_ frame: LiveViewFrame, _ outcome: Offer) {
        mailbox.withLock { box in
            switch outcome {
            case .delivered:
                box.delivered += 1
                box.bytes += frame.jpeg.count
            case .dropped: box.dropped += 1
            case .taken, .kept, .ignored: break
            }
        }
    }

    /// Ends `next()`: the view stopped, or the viewer closed.
    func finish() {
        let (waiter, endWaiters) = mailbox.withLock { box in
            box.closed = true
            box.pending = nil
            box.sink = nil
            defer {
                box.waiter = nil
                box.endWaiters = []
            }
            return (box.waiter, box.endWaiters)
        }
        waiter?.resume(returning: nil)
        for waiter in endWaiters { waiter.resume() }
    }
}
