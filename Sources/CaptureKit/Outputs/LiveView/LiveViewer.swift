import Synchronization

/// One viewer of a live view (`LiveViewOutput.view(of:settings:)`): it takes
/// the view's pictures one at a time with `next()`. A viewer that is slow to
/// take them misses some (`droppedFrameCount`): it holds only the newest,
/// so it never holds back the camera, recordings or the other viewers.
/// `close()` ends its watching (the view holds its viewers until then).
///
/// A sender that writes without waking a task for each picture (on an
/// event loop) has the pictures handed to it instead, with `deliver(to:)`.
package final class LiveViewer: Sendable {
    /// Takes a picture without blocking (it is called under the viewer's
    /// lock, on the view's thread, or on `deliver(to:)`'s caller for the one
    /// held then); answers false when it could not (its connection is full),
    /// which counts as dropped.
    package typealias Sink = @Sendable (LiveViewFrame) -> Bool

    private struct Mailbox {
        var pending: LiveViewFrame?
        var waiter: CheckedContinuation<LiveViewFrame?, Never>?
        var sink: Sink?
        var endWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextEndWaiter = 0
        var closed = false
        var delivered = 0
        var bytes = 0
        var dropped = 0

        /// Counts a picture handed over.
        mutating func countDelivered(_ frame: LiveViewFrame) {
            delivered += 1
            bytes += frame.jpeg.count
        }
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
    /// closed, the session stops, the calling task is cancelled, or its
    /// pictures go to a sink (`deliver(to:)`).
    package func next() async -> LiveViewFrame? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<LiveViewFrame?, Never>) in
                let ready = mailbox.withLock { box -> LiveViewFrame?? in
                    if let frame = box.pending {
                        box.pending = nil
                        box.countDelivered(frame)
                        view.countDelivered(frame)
                        return .some(frame)
                    }
                    if box.closed || box.sink != nil || Task.isCancelled { return .some(nil) }
                    box.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            mailbox.withLock { box in
                defer { box.waiter = nil }
                return box.waiter
            }?.resume(returning: nil)
        }
    }

    /// Hands every picture from now on to `sink` as it is made (the one held
    /// now at once), instead of keeping it for `next()`, which answers nil
    /// from now on. Once `close()` (or the view's end) has returned, the sink
    /// is not called again: what it sent is all the viewer gets.
    package func deliver(to sink: @escaping Sink) {
        let waiter = mailbox.withLock { box -> CheckedContinuation<LiveViewFrame?, Never>? in
            guard !box.closed else { return nil }
            box.sink = sink
            if let pending = box.pending {
                box.pending = nil
                hand(pending, to: sink, in: &box)
            }
            defer { box.waiter = nil }
            return box.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Returns once the viewer is closed, its view has ended, or the calling task is cancelled.
    package func ended() async {
        let id = mailbox.withLock { box -> Int in
            defer { box.nextEndWaiter += 1 }
            return box.nextEndWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ended = mailbox.withLock { box -> Bool in
                    if box.closed || Task.isCancelled { return true }
                    box.endWaiters[id] = continuation
                    return false
                }
                if ended { continuation.resume() }
            }
        } onCancel: {
            mailbox.withLock { $0.endWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Pictures handed over (taken with `next()`, or taken by the sink), and their bytes.
    package var deliveredFrameCount: Int { mailbox.withLock { $0.delivered } }
    package var deliveredByteCount: Int { mailbox.withLock { $0.bytes } }
    /// Pictures this viewer missed: replaced by a newer one before it took
    /// them, or refused by its sink (its connection was full).
    package var droppedFrameCount: Int { mailbox.withLock { $0.dropped } }

    /// Stops watching: `next()` answers nil from now on, and the view stops
    /// encoding once its last viewer has gone.
    package func close() {
        finish()
        view.remove(self)
    }

    /// A new picture from the view (on its thread): handed to a waiting
    /// `next()` or the sink, or kept for the next `next()`. Counted here, in
    /// the viewer and the view, before anyone can see it arrive.
    func offer(_ frame: LiveViewFrame) {
        let waiter = mailbox.withLock { box -> CheckedContinuation<LiveViewFrame?, Never>? in
            guard !box.closed else { return nil }
            if let sink = box.sink {
                // Under the lock: once `finish()` has the lock, no picture is on its way to the sink,
                // so what the sender writes after its end (HTTP's last chunk) comes after every picture.
                hand(frame, to: sink, in: &box)
                return nil
            }
            if let waiter = box.waiter {
                box.waiter = nil
                box.countDelivered(frame)
                view.countDelivered(frame)
                return waiter
            }
            if box.pending != nil {
                box.dropped += 1
                view.countDropped()
            }
            box.pending = frame
            return nil
        }
        waiter?.resume(returning: frame)
    }

    private func hand(_ frame: LiveViewFrame, to sink: Sink, in box: inout Mailbox) {
        if sink(frame) {
            box.countDelivered(frame)
            view.countDelivered(frame)
        } else {
            box.dropped += 1
            view.countDropped()
        }
    }

    /// Ends `next()`, the sink and `ended()`: the view stopped, or the viewer closed.
    func finish() {
        let (waiter, endWaiters) = mailbox.withLock { box in
            box.closed = true
            box.pending = nil
            box.sink = nil
            defer {
                box.waiter = nil
                box.endWaiters = [:]
            }
            return (box.waiter, box.endWaiters.values)
        }
        waiter?.resume(returning: nil)
        for waiter in endWaiters { waiter.resume() }
    }
}
