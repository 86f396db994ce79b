import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Where the inputs' samples go: placed on the file's timeline (sessions,
/// edit lists or trimming), then written, held back until the header can
/// be written, or interleaved by the muxer.
extension AssetWriter {
    // MARK: Called by inputs

    /// Where a sample at source time `time` goes: its file time (sessions
    /// laid end to end, so a pause leaves no gap in the media), moved by the
    /// timeline offset in fragmented files; nil when it falls outside every
    /// session. Throws when samples cannot be appended now.
    func placement(forSource time: MediaTime) throws(WriterError) -> (time: MediaTime, session: Int)? {
        try lock.withLock { () throws(WriterError) in
            try checkAppendable()
            guard time.isNumeric else { throw .invalidState("sample times must be numeric, not \(time)") }
            guard let session = timeline.sessionIndex(forSource: time), let fileTime = timeline.fileTime(forSource: time) else { return nil }
            let placed = shiftedByOffset(fileTime)
            return placed.isNumeric ? (placed, session) : nil
        }
    }

    /// For audio: the part of a buffer that falls in a session, and where
    /// it goes on the file's timeline; nil when none of it does.
    func placement(forSource start: MediaTime, duration: MediaTime) throws(WriterError) -> (skip: MediaTime, time: MediaTime, keep: MediaTime)? {
        try lock.withLock { () throws(WriterError) in
            try checkAppendable()
            guard start.isNumeric, duration.isNumeric else { throw .invalidState("sample times must be numeric, not \(start)") }
            guard let (skip, keep) = timeline.overlap(start: start, duration: duration),
                  let time = timeline.fileTime(forSource: start + skip) else { return nil }
            return (skip, shiftedByOffset(time), keep)
        }
    }

    /// A file time moved later by the timeline offset. Exact where the two
    /// share a 32-bit timescale; otherwise (nanosecond capture stamps and a
    /// 1/48000 or 1/90000 startup delay) with the offset rounded to the
    /// time's own timescale, far finer than any track's.
    /// Where the file's timeline starts, as samples are stamped: its time 0 moved by the offset.
    var fileStartTime: MediaTime { lock.withLock { shiftedByOffset(.zero) } }

    func shiftedByOffset(_ time: MediaTime) -> MediaTime {
        let exact = time + timelineOffset
        if exact.isNumeric || !time.isNumeric { return exact }
        return time + timelineOffset.converted(toTimescale: time.timescale)
    }

    func checkAppendable() throws(WriterError) {
        switch state {
        case .writing:
            if finishing { throw .invalidState("the writer is finishing; no more samples can be appended") }
            if !timeline.hasStarted { throw .invalidState("start a session before appending samples") }
        case .failed: throw failure ?? .invalidState("the writer has failed")
        default: throw .invalidState("samples can only be appended while writing (status: \(state.rawValue))")
        }
    }

    /// Hands one packet (timed in `timeBase`) to the muxer. A video
    /// track's latest packet is held back until the next one comes, so that
    /// at the end it can be made to last until the session's end.
    func write(packet: UnsafeMutablePointer<AVPacket>, timeBase: AVRational, streamIndex: Int) throws(WriterError) {
        try lock.withLock { () throws(WriterError) in
            guard state == .writing, let format else { throw failure ?? .invalidState("the writer is not writing (status: \(state.rawValue))") }
            packet.pointee.stream_index = Int32(streamIndex)
            payloadBytes += Int64(packet.pointee.size)
            packetCount += 1
            if let deferredHeader {
                // Kept in its own time base: writing the header may change
                // the stream's (Matroska's becomes 1/1000), and a packet
                // rescaled before that would play 48 times too late.
                do throws(WriterError) { try deferredHeader.keep(packet, timeBase: timeBase) } catch { throw failLocked(error) }
                return
            }
            try place(packet, timeBase: timeBase, into: format)
        }
    }

    /// A packet timed in `timeBase` onto its stream's time base, then on
    /// its way to the muxer. Lock held, header written.
    func place(_ packet: UnsafeMutablePointer<AVPacket>, timeBase: AVRational,
               into format: UnsafeMutablePointer<AVFormatContext>) throws(WriterError) {
        let streamIndex = Int(packet.pointee.stream_index)
        av_packet_rescale_ts(packet, timeBase, format.pointee.streams[streamIndex]!.pointee.time_base)
        keepDecodeTimesIncreasing(packet, streamIndex: streamIndex)
        try route(packet, into: format)
    }

    /// Moves a packet whose decode time, in the container's time base, is
    /// not after the one before it to the next tick. A pause can bring the
    /// last frame before it and the first after the resume closer together
    /// than one tick of a coarse time base (Matroska counts milliseconds),
    /// and two samples at one decode time are no valid stream. Lock held.
    func keepDecodeTimesIncreasing(_ packet: UnsafeMutablePointer<AVPacket>, streamIndex: Int) {
        guard packet.pointee.dts != cffmpeg_AV_NOPTS_VALUE else { return }
        if let last = lastDecodeTicks[streamIndex], packet.pointee.dts <= last {
            let shift = last + 1 - packet.pointee.dts
            packet.pointee.dts += shift
            if packet.pointee.pts != cffmpeg_AV_NOPTS_VALUE { packet.pointee.pts = max(packet.pointee.pts, packet.pointee.dts) }
        }
        lastDecodeTicks[streamIndex] = packet.pointee.dts
    }

    /// A packet on its way to the muxer: video waits for the next packet of
    /// its track (see `write`); the rest goes straight in. Lock held.
    ///
    /// In fragments that become a regular movie every track's packets wait
    /// so, and each is made to last until the next of its track: the
    /// muxer starts a fragment's samples where the previous fragment's last
    /// one ends, so a gap (samples a device lost) must be in that duration
    /// to stay in the file, as the sample tables of a movie written in one
    /// piece state it (the steps between decode times).
    func route(_ packet: UnsafeMutablePointer<AVPacket>, into format: UnsafeMutablePointer<AVFormatContext>) throws(WriterError) {
        let streamIndex = Int(packet.pointee.stream_index)
        guard spans[streamIndex].bridgesEveryGap || becomesRegularMovie else {
            try mux(packet, into: format)
            return
        }
        if heldPackets[streamIndex] == nil {
            guard let fresh = av_packet_alloc() else { throw failLocked(.ffmpeg(FFmpegError(call: "av_packet_alloc", code: cffmpeg_averror(ENOMEM)))) }
            heldPackets[streamIndex] = fresh
        }
        let held = heldPackets[streamIndex]!
        if held.pointee.size > 0 || held.pointee.side_data_elems > 0 {
            let ownDuration = held.pointee.duration
            if becomesRegularMovie, held.pointee.dts != cffmpeg_AV_NOPTS_VALUE, packet.pointee.dts != cffmpeg_AV_NOPTS_VALUE,
               packet.pointee.dts > held.pointee.dts {
                held.pointee.duration = packet.pointee.dts - held.pointee.dts
            }
            try mux(held, into: format, spanDuration: ownDuration)
        }
        av_packet_move_ref(held, packet)
    }

    /// Writes the video packets held back, each made to last until the end
    /// of the last session where it would end sooner: a frame shows until
    /// the next one, and the last until the recording stops, however long
    /// a camera took before the frame it did not deliver in time.
    func writeHeldPackets(into format: UnsafeMutablePointer<AVFormatContext>) throws(WriterError) {
        let sessionEnd: MediaTime? = timeline.sessions.last.flatMap { last in
            last.end == nil ? nil : shiftedByOffset(SessionTimeline.totalDuration(timeline.sessions))
        }
        for (index, held) in heldPackets.enumerated() {
            guard let held, held.pointee.size > 0 else { continue }
            let timeBase = format.pointee.streams[index]!.pointee.time_base
            if spans[index].bridgesEveryGap, let sessionEnd, sessionEnd.isNumeric, held.pointee.pts != cffmpeg_AV_NOPTS_VALUE {
                let end = av_rescale_q_rnd(sessionEnd.value, AVRational(num: 1, den: sessionEnd.timescale), timeBase,
                                           AVRounding(AV_ROUND_DOWN.rawValue))
                let shownUntil = max(spans[index].runs.last?.end ?? 0, held.pointee.pts + max(0, held.pointee.duration))
                if end > shownUntil { held.pointee.duration = max(0, held.pointee.duration) + (end - shownUntil) }
            }
            try mux(held, into: format)
        }
    }

    /// av_interleaved_write_frame, with the track's span recorded (over
    /// `spanDuration` when given: the packet's own, before it was made to
    /// reach the next). Called with the lock held; a failure fails the writer.
    func mux(_ packet: UnsafeMutablePointer<AVPacket>, into format: UnsafeMutablePointer<AVFormatContext>,
                     spanDuration: Int64? = nil) throws(WriterError) {
        let streamIndex = Int(packet.pointee.stream_index)
        var span = spans[streamIndex]
        let dts = packet.pointee.dts == cffmpeg_AV_NOPTS_VALUE ? packet.pointee.pts : packet.pointee.dts
        let isFirst = span.firstDecode == nil
        if isFirst { span.firstDecode = dts }
        span.cover(packet.pointee.pts, packet.pointee.pts + max(0, spanDuration ?? packet.pointee.duration))
        span.packets += 1
        if packet.pointee.size > 0 { span.tally(decode: dts, presentation: packet.pointee.pts, keyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0) }
        spans[streamIndex] = span
        if isFirst { try updateSessionLog { $0.firstDecodeTimes[streamIndex] = dts } }
        let status = av_interleaved_write_frame(format, packet)
        if status < 0 {
            throw failLocked(ioFailure(FFmpegError(call: "av_interleaved_write_frame(\(fileType.muxerName))", code: status)))
        }
    }

    /// Puts the writer into the failed state, the lock being held.
    func failLocked(_ error: WriterError) -> WriterError {
        state = .failed
        failure = error
        return error
    }
}
