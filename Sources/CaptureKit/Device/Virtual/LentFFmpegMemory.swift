import CFFmpeg
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Lends the memory of demuxed packets to samples without copying it: the
/// packet's reference moves into a recycled AVPacket that the sample's
/// storage unreferences when it goes. The AVPacket structures themselves are
/// reused, so lending allocates nothing beyond what demuxing did.
final class PacketLender: Sendable {
    /// Packets not lent; each lent one is owned by the one storage it was lent to until it comes back here.
    private let free = Locked<[UnsafeMutablePointer<AVPacket>]>([])
    private let lent: LentSamples

    /// A lender that counts what it lends in `lent`.
    init(counting lent: LentSamples) { self.lent = lent }

    deinit {
        for packet in free.current {
            var pointer: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&pointer)
        }
    }

    /// Storage over `packet`'s data, which moves out of `packet` (left blank
    /// for the next read); nil if no AVPacket could be allocated.
    func lend(moving packet: UnsafeMutablePointer<AVPacket>, count: Int? = nil) -> SampleStorage? {
        guard let holder = free.withLock({ $0.popLast() }) ?? av_packet_alloc() else { return nil }
        av_packet_move_ref(holder, packet)
        let size = min(count ?? Int(holder.pointee.size), Int(holder.pointee.size))
        lent.lend()
        return SampleStorage(lending: UnsafeRawBufferPointer(start: holder.pointee.data, count: size)) { [self] in
            av_packet_unref(holder)
            free.withLock { $0.append(holder) }
            lent.giveBack()
        }
    }
}

/// Lends the first plane of decoded frames to samples the same way.
final class FrameLender: Sendable {
    /// Frames not lent; each lent one is owned by the one storage it was lent to until it comes back here.
    private let free = Locked<[UnsafeMutablePointer<AVFrame>]>([])
    private let lent: LentSamples

    /// A lender that counts what it lends in `lent`.
    init(counting lent: LentSamples) { self.lent = lent }

    deinit {
        for frame in free.current {
            var pointer: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&pointer)
        }
    }

    /// Storage over `count` bytes of `frame`'s first plane, whose references
    /// move out of `frame`; nil if no AVFrame could be allocated.
    func lend(moving frame: UnsafeMutablePointer<AVFrame>, count: Int) -> SampleStorage? {
        guard let holder = free.withLock({ $0.popLast() }) ?? av_frame_alloc() else { return nil }
        av_frame_move_ref(holder, frame)
        lent.lend()
        return SampleStorage(lending: UnsafeRawBufferPointer(start: holder.pointee.data.0, count: count)) { [self] in
            av_frame_unref(holder)
            free.withLock { $0.append(holder) }
            lent.giveBack()
        }
    }
}

/// How many samples a source has lent and not had back, with a wait in
/// poll() until fewer are out. A sample coming back wakes the waiting loop
/// only when it does wait, so a source that never waits makes no system
/// call per sample.
final class LentSamples: Sendable {
    private struct State {
        var outstanding = 0
        var waiting = false
        /// While the loop waits, how few samples may be out before it is woken.
        var resumeAt = 0
    }

    private let state = Mutex(State())
    /// Readable after a sample came back while the loop waited.
    private let returned = WakeupPipe()

    deinit { returned.close() }

    func lend() { state.withLock { $0.outstanding += 1 } }

    func giveBack() {
        let wake = state.withLock { state -> Bool in
            state.outstanding -= 1
            guard state.waiting, state.outstanding <= state.resumeAt else { return false }
            state.waiting = false
            return true
        }
        if wake { returned.wake() }
    }

    /// Returns at once while fewer than `limit` samples are out; otherwise
    /// waits until no more than `resume` are (fewer wake-ups of both threads
    /// than one per sample). True then, false once `stop` is raised.
    func waitUntilFewer(than limit: Int, resumingAt resume: Int, stop: CaptureStopSignal) -> Bool {
        var limit = limit
        while !stop.isRaised {
            // Decided under the lock: a sample back after this wakes the poll below.
            let below = state.withLock { state -> Bool in
                state.waiting = state.outstanding >= limit
                state.resumeAt = min(resume, limit - 1)
                return !state.waiting
            }
            limit = resume + 1
            if below { return true }
            stop.waitUntilRaised(orReadable: returned.readEnd)
            returned.drain()
        }
        return false
    }
}
