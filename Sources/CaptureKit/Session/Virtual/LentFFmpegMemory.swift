import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Lends the memory of demuxed packets to samples without copying it: the
/// packet's reference moves into a recycled AVPacket that the sample's
/// storage unreferences when it goes. The AVPacket structures themselves are
/// reused, so lending allocates nothing beyond what demuxing did.
final class PacketLender: @unchecked Sendable {
    private let lock = WriterLock()
    private var free: [UnsafeMutablePointer<AVPacket>] = []

    deinit {
        for packet in free {
            var pointer: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&pointer)
        }
    }

    /// Storage over `packet`'s data, which moves out of `packet` (left blank
    /// for the next read); nil if no AVPacket could be allocated.
    func lend(moving packet: UnsafeMutablePointer<AVPacket>, count: Int? = nil) -> SampleStorage? {
        guard let holder = lock.withLock({ free.popLast() }) ?? av_packet_alloc() else { return nil }
        av_packet_move_ref(holder, packet)
        let size = min(count ?? Int(holder.pointee.size), Int(holder.pointee.size))
        lock.withLock { outstanding += 1 }
        return SampleStorage(lending: UnsafeRawBufferPointer(start: holder.pointee.data, count: size)) { [self] in
            av_packet_unref(holder)
            lock.withLock { free.append(holder); outstanding -= 1 }
        }
    }

    private var outstanding = 0
    /// Packets lent and not yet released.
    var lentCount: Int { lock.withLock { outstanding } }
}

/// Lends the first plane of decoded frames to samples the same way.
final class FrameLender: @unchecked Sendable {
    private let lock = WriterLock()
    private var free: [UnsafeMutablePointer<AVFrame>] = []

    deinit {
        for frame in free {
            var pointer: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&pointer)
        }
    }

    /// Storage over `count` bytes of `frame`'s first plane, whose references
    /// move out of `frame`; nil if no AVFrame could be allocated.
    func lend(moving frame: UnsafeMutablePointer<AVFrame>, count: Int) -> SampleStorage? {
        guard let holder = lock.withLock({ free.popLast() }) ?? av_frame_alloc() else { return nil }
        av_frame_move_ref(holder, frame)
        lock.withLock { outstanding += 1 }
        return SampleStorage(lending: UnsafeRawBufferPointer(start: holder.pointee.data.0, count: count)) { [self] in
            av_frame_unref(holder)
            lock.withLock { free.append(holder); outstanding -= 1 }
        }
    }

    private var outstanding = 0
    /// Frames lent and not yet released.
    var lentCount: Int { lock.withLock { outstanding } }
}
