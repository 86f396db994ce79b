import Synchronization

/// One viewer of a live view (`LiveViewOutput.view(of:settings:)`): it takes
/// the view's pictures one at a time with `next()`. A viewer that is slow to
/// take them misses some (`droppedFrameCount`): it holds only the newest,
/// so it never holds back the camera, recordings or the other viewers.
/// `close()` ends its watching (the view holds its viewers until then).
package final class LiveViewer: Sendable {
    private struct Mailbox {
        var pending: LiveViewFrame?
        var waiter: CheckedContinuation<LiveViewFrame?, Never>?
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
                    if box.closed || Task.isCancelled { return .some(nil) }
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

    /// A new picture from the view; answers whether an unread one was dropped for it.
    @discardableResult
    func offer(_ frame: LiveViewFrame) -> Bool {
        let (waiter, dropped) = mailbox.withLock { box -> (CheckedContinuation<LiveViewFrame?, Never>?, Bool) in
            guard !box.closed else { return (nil, false) }
            if let waiter = box.waiter {
                box.waiter = nil
                box.delivered += 1
                box.bytes += frame.jpeg.count
                return (waiter, false)
            }
            let dropped = box.pending != nil
            if dropped { box.dropped += 1 }
            box.pending = frame
            return (nil, dropped)
        }
        if let waiter {
            view.countDelivered(frame)
            waiter.resume(returning: frame)
        }
        return dropped
    }

    /// Ends `next()`: the view stopped, or the viewer closed.
    func finish() {
        mailbox.withLock { box in
            box.closed = true
            box.pending = nil
            defer { box.waiter = nil }
            return box.waiter
        }?.resume(returning: nil)
    }
}
