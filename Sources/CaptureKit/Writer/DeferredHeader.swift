import CFFmpeg

/// A file header that waits for codec configuration only the media brings:
/// H.264/HEVC copied from a camera carries its parameter sets in band, with
/// its keyframes, while MP4, QuickTime and Matroska want them (avcC, hvcC,
/// CodecPrivate) in the header. Until every such track has supplied them,
/// the muxer options are kept and packets of the other tracks wait here, as
/// copies (so no capture buffer is held).
///
/// Owned by one `AssetWriter` and used under its lock.
final class DeferredHeader {
    /// Streams that still wait for their configuration.
    private(set) var awaitedStreams: Set<Int>
    /// The muxer options for `avformat_write_header`, owned until then.
    var options: OpaquePointer?
    /// Each packet with the time base its times are in.
    private var packets: [(packet: UnsafeMutablePointer<AVPacket>?, timeBase: AVRational)] = []

    init(awaitedStreams: Set<Int>, options: OpaquePointer?) {
        self.awaitedStreams = awaitedStreams
        self.options = options
    }

    deinit {
        for index in packets.indices { av_packet_free(&packets[index].packet) }
        av_dict_free(&options)
    }

    /// Sets `stream`'s codec configuration (its extradata, which libavformat
    /// frees with the stream); true once no stream waits any longer.
    func supply(_ configuration: [UInt8], for stream: UnsafeMutablePointer<AVStream>, index: Int) throws(WriterError) -> Bool {
        guard awaitedStreams.contains(index) else { return awaitedStreams.isEmpty }
        guard !configuration.isEmpty, let extradata = av_mallocz(configuration.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
            throw .ffmpeg(FFmpegError(call: "av_mallocz", code: cffmpeg_averror(ENOMEM)))
        }
        configuration.withUnsafeBytes { extradata.copyMemory(from: $0.baseAddress!, byteCount: configuration.count) }
        let parameters = stream.pointee.codecpar!
        av_free(parameters.pointee.extradata)
        parameters.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
        parameters.pointee.extradata_size = Int32(configuration.count)
        awaitedStreams.remove(index)
        return awaitedStreams.isEmpty
    }

    /// Marks `index` as having its parameters (set on the stream by the
    /// caller); true once no stream waits any longer.
    func markSupplied(index: Int) -> Bool {
        awaitedStreams.remove(index)
        return awaitedStreams.isEmpty
    }

    /// Keeps a copy of `packet` (its bytes owned by the copy), timed in
    /// `timeBase`, until the header is written.
    func keep(_ packet: UnsafeMutablePointer<AVPacket>, timeBase: AVRational) throws(WriterError) {
        var copy = av_packet_clone(packet)
        guard copy != nil else { throw .ffmpeg(FFmpegError(call: "av_packet_clone", code: cffmpeg_averror(ENOMEM))) }
        let writable = av_packet_make_writable(copy)
        guard writable >= 0 else {
            av_packet_free(&copy)
            throw .ffmpeg(FFmpegError(call: "av_packet_make_writable", code: writable))
        }
        packets.append((copy, timeBase))
    }

    /// Hands the kept packets with their time bases, in the order they
    /// came, to `write`, and lets go of them.
    func release(into write: (UnsafeMutablePointer<AVPacket>, AVRational) throws(WriterError) -> Void) throws(WriterError) {
        let kept = packets
        packets = []
        var index = 0
        defer {
            for rest in kept[index...] { var packet = rest.packet; av_packet_free(&packet) }
        }
        while index < kept.count {
            var packet = kept[index].packet
            if let packet { try write(packet, kept[index].timeBase) }
            av_packet_free(&packet)
            index += 1
        }
    }
}
